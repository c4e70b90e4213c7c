// Errors of Skein Streams, named after Kafka Streams' exceptions so that code and logs read the same.

/** The base of Streams' errors (Kafka's StreamsException). */
export class StreamsException extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'StreamsException'
  }
}

/** A topology that cannot run: a bad name, an unknown parent or store, topics that are not co-partitioned. */
export class TopologyException extends StreamsException {
  constructor(message: string) {
    super(`Invalid topology: ${message}`)
    this.name = 'TopologyException'
  }
}

/** A store that cannot be queried now: unknown, not local, being restored or migrated (Kafka's InvalidStateStoreException). */
export class InvalidStateStoreException extends StreamsException {
  constructor(message: string) {
    super(message)
    this.name = 'InvalidStateStoreException'
  }
}

/** A call that needs a running instance (Kafka's StreamsNotStartedException / IllegalStateException). */
export class StreamsNotStartedException extends StreamsException {
  constructor(message: string) {
    super(message)
    this.name = 'StreamsNotStartedException'
  }
}

/** The task moved to another instance (a fenced producer, a lost generation): the thread rejoins the group. */
export class TaskMigratedException extends StreamsException {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'TaskMigratedException'
  }
}

/** A record could not be (de)serialized. */
export class SerializationException extends StreamsException {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'SerializationException'
  }
}
