// What to do with a record that cannot be read or written (Kafka's DeserializationExceptionHandler and
// ProductionExceptionHandler): 'logAndContinue' skips it with a warning, 'logAndFail' stops the thread
// (the default for both, as in Kafka: a silent loss is worse than a stop). A function decides per record.
import type { ConsumedRecord } from '../../client/record-batches.js'

export type HandlerResponse = 'CONTINUE' | 'FAIL'

export type DeserializationExceptionHandler = (ctx: { taskId: string; processorNodeId: string }, record: ConsumedRecord, error: Error) => HandlerResponse

export type ProductionExceptionHandler = (record: { topic: string; partition: number | undefined; key: Buffer | null; value: Buffer | null; timestamp: number }, error: Error, kind: 'send' | 'serialization') => HandlerResponse

export const LogAndContinueExceptionHandler = (): HandlerResponse => 'CONTINUE'
export const LogAndFailExceptionHandler = (): HandlerResponse => 'FAIL'

export type HandlerSetting<H> = 'logAndContinue' | 'logAndFail' | H

export function deserializationHandler(s: HandlerSetting<DeserializationExceptionHandler> | undefined): DeserializationExceptionHandler {
  if (s === undefined || s === 'logAndFail') return LogAndFailExceptionHandler
  if (s === 'logAndContinue') return LogAndContinueExceptionHandler
  return s
}

export function productionHandler(s: HandlerSetting<ProductionExceptionHandler> | undefined): ProductionExceptionHandler {
  if (s === undefined || s === 'logAndFail') return LogAndFailExceptionHandler
  if (s === 'logAndContinue') return LogAndContinueExceptionHandler
  return s
}
