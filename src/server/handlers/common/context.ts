// What a handler knows about the request it serves, besides the request body: the request's own facts
// and the broker's services (./ports.ts), which the broker builds once and the dispatcher passes on.
import type { RequestHeader } from '../../../protocol/header.js'
import type {
  ApiVersionRange,
  AuthorizationService,
  ClientConnection,
  ClientQuotaAdmin,
  ConfigService,
  FetchSessionService,
  ControlPlaneService,
  GroupConfigAdmin,
  GroupCoordinatorService,
  HandlerLog,
  MetadataView,
  PartitionService,
  ProducerIdService,
  ScramCredentialAdmin,
  SharePartitionService,
  TopicAdmin,
  TransactionCoordinatorService,
  ShareStateCoordinatorService,
  ShareGroupOffsetsService,
} from './ports.js'

/** The broker as handlers see it: one narrow service per concern. */
export interface BrokerServices {
  /** Partition data: leader checks, appends, consumer reads, offsets, fetch long-polling. */
  partitions: PartitionService
  /** Brokers, topics, partition leaders (read-only). */
  metadata: MetadataView
  /** Topic creation, deletion, partitions and config overrides. */
  topics: TopicAdmin
  /** The broker configuration and its dynamic layers. */
  configs: ConfigService
  /** The group coordinator (consumer groups, committed offsets). */
  groups: GroupCoordinatorService
  /** Group configs (GROUP config resources). */
  groupConfigs: GroupConfigAdmin
  /** The transaction coordinator (transactional producers). */
  transactions: TransactionCoordinatorService
  /** Producer ids for idempotent producers. */
  producerIds: ProducerIdService
  /** Incremental fetch sessions (KIP-227). */
  fetchSessions: FetchSessionService
  /** Share-partitions and share sessions (KIP-932: ShareFetch, ShareAcknowledge). */
  sharePartitions: SharePartitionService
  /**
   * The share coordinator (KIP-932: InitializeShareGroupState ... ReadShareGroupStateSummary, FindCoordinator
   * key type SHARE); without it those answer COORDINATOR_NOT_AVAILABLE.
   */
  shareStates?: ShareStateCoordinatorService
  /**
   * Share groups' offsets (KIP-932: DescribeShareGroupOffsets, AlterShareGroupOffsets,
   * DeleteShareGroupOffsets); without it those answer COORDINATOR_NOT_AVAILABLE.
   */
  shareGroupOffsets?: ShareGroupOffsetsService
  /** The control plane: requests between the controller and this broker. */
  control: ControlPlaneService
  /** The authorizer (ACLs); allows everything when authorizer.class.name is empty. */
  acl: AuthorizationService
  /** SCRAM credentials (DescribeUserScramCredentials, AlterUserScramCredentials). */
  scram: ScramCredentialAdmin
  /** Client quotas (DescribeClientQuotas, AlterClientQuotas, controller mutation quotas). */
  quotas: ClientQuotaAdmin
  log: HandlerLog
  /** The APIs served and their version ranges (from the handler table). */
  apiVersions: readonly ApiVersionRange[]
}

export interface RequestContext extends BrokerServices {
  header: RequestHeader
  apiKey: number
  apiVersion: number
  clientId: string | null
  connection: ClientConnection
  /** When the whole frame had arrived (ms). */
  receivedAt: number
  /**
   * Called once the response has been written (or the connection closed); handlers that hand out
   * file regions release their leases here.
   */
  onResponseDone(fn: () => void): void
}
