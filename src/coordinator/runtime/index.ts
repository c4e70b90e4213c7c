// A small deterministic runtime for coordinators: operations -> records -> PartitionWriter -> replay.
export { ManualClock, systemClock, type Clock, type TimerHandle } from './clock.js'
export { CoordinatorRecordError } from './record-error.js'
export { InMemoryPartitionWriter, type CoordinatorRecord, type PartitionWriter, type ReadChunk, type StoredRecord } from './partition-writer.js'
export {
  CoordinatorRuntime,
  CoordinatorTimer,
  appendErrorToCoordinatorError,
  noRecords,
  type CoordinatorLogger,
  type CoordinatorResult,
  type CoordinatorRuntimeOptions,
  type CoordinatorStateMachine,
  type StateMachineContext,
  type WriteOperation,
} from './runtime.js'
