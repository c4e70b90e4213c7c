// Checks Debian's sarama (golang-github-shopify-sarama-dev 1.22.1) against a Kafka-compatible cluster:
// metadata, topic creation through ClusterAdmin, an idempotent acks=all producer, a partition consumer,
// and a consumer group that commits its offsets. Each check prints one JSON line
// {"client","check","ok","detail"}; the exit code is 0 only if every check passed, so a caller sees
// both the per-check result and the overall one.
//
// Usage: sarama -brokers host:port[,...] -topic T -group G [-messages N] [-partitions P] [-replicas R] [-checks a,b,...]
// Checks run in the order metadata, create_topic, produce_idempotent, consume, group_commit,
// offset_commit_v1_refused, default_version, group_offsets
// (a later check needs the earlier ones: -checks produce_idempotent,consume is the smoke).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

const clientName = "sarama"

// kafkaVersion is the newest broker version sarama 1.22 knows below 2.2: it decides the request
// versions sarama sends (Produce v3, Fetch v4, Metadata v5 for the admin, v1 for the client,
// CreateTopics v2, JoinGroup v1, OffsetCommit v2, OffsetFetch v1, FindCoordinator v0).
var kafkaVersion = sarama.V2_1_0_0

var failed bool

// check runs one check and reports it.
func check(name string, f func() (error, string)) {
	err, detail := f()
	report(name, err, detail)
}

func report(check string, err error, detail string) {
	line := map[string]interface{}{"client": clientName, "check": check, "ok": err == nil, "detail": detail}
	if err != nil {
		failed = true
		line["detail"] = strings.TrimSpace(detail + " " + err.Error())
	}
	out, _ := json.Marshal(line)
	fmt.Println(string(out))
}

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = kafkaVersion
	c.ClientID = "skein-compat-sarama"
	c.Metadata.Retry.Max = 10
	c.Metadata.Retry.Backoff = 500 * time.Millisecond
	c.Admin.Timeout = 30 * time.Second
	return c
}

func main() {
	brokersFlag := flag.String("brokers", "", "bootstrap servers, comma-separated")
	topic := flag.String("topic", "go-sarama", "topic to create and use")
	group := flag.String("group", "go-sarama-group", "consumer group id")
	messages := flag.Int("messages", 30, "messages to produce")
	partitions := flag.Int("partitions", 3, "partitions of the topic")
	replicas := flag.Int("replicas", 3, "replication factor of the topic")
	expectBrokers := flag.Int("expect-brokers", 3, "brokers the metadata must list")
	checksFlag := flag.String("checks", "metadata,create_topic,produce_idempotent,consume,group_commit,group_offsets,offset_commit_v1_refused,default_version", "checks to run")
	flag.Parse()
	if *brokersFlag == "" {
		fmt.Fprintln(os.Stderr, "usage: sarama -brokers host:port[,...] [-topic T] [-group G]")
		os.Exit(2)
	}
	brokers := strings.Split(*brokersFlag, ",")
	want := map[string]bool{}
	for _, c := range strings.Split(*checksFlag, ",") {
		want[strings.TrimSpace(c)] = true
	}

	if want["metadata"] {
		check("metadata", func() (error, string) { return checkMetadata(brokers, *expectBrokers) })
	}
	if want["create_topic"] {
		check("create_topic", func() (error, string) { return createTopic(brokers, *topic, *partitions, *replicas) })
	}
	var produced map[string]bool
	if want["produce_idempotent"] {
		var err error
		var detail string
		produced, detail, err = produce(brokers, *topic, *messages, *partitions)
		report("produce_idempotent", err, detail)
	}
	if want["consume"] {
		check("consume", func() (error, string) { return consume(brokers, *topic, produced) })
	}
	if want["group_commit"] {
		check("group_commit", func() (error, string) { return groupConsume(brokers, *topic, *group, produced) })
	}
	if want["offset_commit_v1_refused"] {
		check("offset_commit_v1_refused", func() (error, string) { return commitV1Refused(brokers, *topic, *group+"-v1") })
	}
	if want["default_version"] {
		check("default_version", func() (error, string) { return defaultVersion(brokers, *topic) })
	}
	if want["group_offsets"] {
		check("group_offsets", func() (error, string) { return groupOffsets(brokers, *topic, *group, len(produced)) })
	}
	if failed {
		os.Exit(1)
	}
}

// checkMetadata: the client's view (Metadata v1) lists every broker, a controller, and the admin's
// DescribeCluster (Metadata v5) agrees.
func checkMetadata(brokers []string, expect int) (error, string) {
	client, err := sarama.NewClient(brokers, config())
	if err != nil {
		return err, "NewClient:"
	}
	defer client.Close()
	seen := client.Brokers()
	controller, err := client.Controller()
	if err != nil {
		return err, "Controller:"
	}
	admin, err := sarama.NewClusterAdmin(brokers, config())
	if err != nil {
		return err, "NewClusterAdmin:"
	}
	defer admin.Close()
	described, controllerID, err := admin.DescribeCluster()
	if err != nil {
		return err, "DescribeCluster:"
	}
	// DescribeCluster sends Metadata v0 (sarama 1.22 sets no version), which has no controller id: its
	// controllerID is -1 from any broker, so only the broker lists are compared.
	detail := fmt.Sprintf("brokers=%d controller=%d describeCluster.brokers=%d describeCluster.controller=%d", len(seen), controller.ID(), len(described), controllerID)
	if len(seen) != expect || len(described) != expect {
		return fmt.Errorf("expected %d brokers", expect), detail
	}
	return nil, detail
}

// createTopic: ClusterAdmin.CreateTopic (CreateTopics v2, sent to the controller), then the topic's
// metadata shows every partition with a leader and the full replica set.
func createTopic(brokers []string, topic string, partitions, replicas int) (error, string) {
	admin, err := sarama.NewClusterAdmin(brokers, config())
	if err != nil {
		return err, "NewClusterAdmin:"
	}
	defer admin.Close()
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: int32(partitions), ReplicationFactor: int16(replicas)}, false)
	if err != nil {
		return err, "CreateTopic:"
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := admin.DescribeTopics([]string{topic})
		detail := ""
		if err == nil && len(md) == 1 && md[0].Err == sarama.ErrNoError && len(md[0].Partitions) == partitions {
			ready := true
			for _, p := range md[0].Partitions {
				if p.Err != sarama.ErrNoError || p.Leader < 0 || len(p.Replicas) != replicas {
					ready = false
				}
			}
			detail = fmt.Sprintf("partitions=%d replicas=%d", len(md[0].Partitions), replicas)
			if ready {
				return nil, detail
			}
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("the topic's partitions have no leaders yet")
			}
			return err, "DescribeTopics:"
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// produce: a SyncProducer with Idempotent (InitProducerId, sequence numbers), acks=all, one in flight,
// sending messages keyed over every partition; every send must be acknowledged with an offset.
func produce(brokers []string, topic string, n, partitions int) (map[string]bool, string, error) {
	c := config()
	c.Producer.Idempotent = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Retry.Max = 10
	c.Producer.Retry.Backoff = 300 * time.Millisecond
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Net.MaxOpenRequests = 1
	producer, err := sarama.NewSyncProducer(brokers, c)
	if err != nil {
		return nil, "NewSyncProducer:", err
	}
	defer producer.Close()
	produced := map[string]bool{}
	offsets := map[int32]int64{}
	for i := 0; i < n; i++ {
		value := fmt.Sprintf("sarama-%d", i)
		partition := int32(i % partitions)
		p, offset, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(value)})
		if err != nil {
			return produced, fmt.Sprintf("SendMessage %d:", i), err
		}
		if p != partition || offset != offsets[p] {
			return produced, "", fmt.Errorf("message %d: acknowledged at %d/%d, expected %d/%d", i, p, offset, partition, offsets[partition])
		}
		offsets[p]++
		produced[value] = true
	}
	return produced, fmt.Sprintf("acked=%d idempotent=true acks=all", len(produced)), nil
}

// consume: a partition consumer per partition (Fetch v4) reads from the oldest offset until it has
// every produced value, each once.
func consume(brokers []string, topic string, produced map[string]bool) (error, string) {
	if len(produced) == 0 {
		return fmt.Errorf("nothing was produced"), ""
	}
	consumer, err := sarama.NewConsumer(brokers, config())
	if err != nil {
		return err, "NewConsumer:"
	}
	defer consumer.Close()
	parts, err := consumer.Partitions(topic)
	if err != nil {
		return err, "Partitions:"
	}
	got := map[string]int{}
	var mu sync.Mutex
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	var pcs []sarama.PartitionConsumer
	for _, p := range parts {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return err, fmt.Sprintf("ConsumePartition %d:", p)
		}
		pcs = append(pcs, pc)
		wg.Add(1)
		go func(pc sarama.PartitionConsumer) {
			defer wg.Done()
			for m := range pc.Messages() {
				mu.Lock()
				got[string(m.Value)]++
				if len(got) == len(produced) {
					once.Do(func() { close(done) })
				}
				mu.Unlock()
			}
		}(pc)
	}
	var consumeErr error
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		consumeErr = fmt.Errorf("timed out")
	}
	for _, pc := range pcs {
		pc.AsyncClose()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return compare(produced, got, consumeErr)
}

type groupHandler struct {
	mu       sync.Mutex
	got      map[string]int
	want     int
	done     chan struct{}
	doneOnce sync.Once
}

func (h *groupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *groupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *groupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for m := range claim.Messages() {
		h.mu.Lock()
		h.got[string(m.Value)]++
		if len(h.got) == h.want {
			h.doneOnce.Do(func() { close(h.done) })
		}
		h.mu.Unlock()
		s.MarkMessage(m, "")
	}
	return nil
}

// groupConsume: a ConsumerGroup (FindCoordinator v0, JoinGroup v1, SyncGroup v0, Heartbeat v0,
// OffsetFetch v1) reads everything from the oldest offset and commits (OffsetCommit v2) on close.
func groupConsume(brokers []string, topic, group string, produced map[string]bool) (error, string) {
	if len(produced) == 0 {
		return fmt.Errorf("nothing was produced"), ""
	}
	c := config()
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.CommitInterval = 200 * time.Millisecond
	// With a retention sarama 1.22 commits with OffsetCommit v2; without one (its default) it sends v1,
	// which Kafka 4.0 removed (KIP-896) and Skein refuses too: see offset_commit_v1_refused.
	c.Consumer.Offsets.Retention = 7 * 24 * time.Hour
	c.Consumer.Return.Errors = true
	c.Consumer.Group.Rebalance.Timeout = 20 * time.Second
	cg, err := sarama.NewConsumerGroup(brokers, group, c)
	if err != nil {
		return err, "NewConsumerGroup:"
	}
	h := &groupHandler{got: map[string]int{}, want: len(produced), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	// Consume returns at each rebalance, and with the coordinator's error when a join fails; a
	// retriable one (COORDINATOR_LOAD_IN_PROGRESS while a new __consumer_offsets partition loads,
	// NOT_COORDINATOR) is retried as an application must, the others end the check.
	var retried []string
	var mu sync.Mutex
	errs := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			err := cg.Consume(ctx, []string{topic}, h)
			if err == nil || ctx.Err() != nil {
				continue
			}
			if kerr, ok := err.(sarama.KError); ok && (kerr == sarama.ErrOffsetsLoadInProgress || kerr == sarama.ErrNotCoordinatorForConsumer || kerr == sarama.ErrConsumerCoordinatorNotAvailable || kerr == sarama.ErrRebalanceInProgress) {
				mu.Lock()
				retried = append(retried, kerr.Error())
				mu.Unlock()
				time.Sleep(500 * time.Millisecond)
				continue
			}
			errs <- err
			return
		}
	}()
	// With Return.Errors a failed commit arrives here instead of in the log.
	go func() {
		for err := range cg.Errors() {
			select {
			case errs <- err:
			default:
			}
		}
	}()
	var consumeErr error
	select {
	case <-h.done:
	case err := <-errs:
		consumeErr = err
	case <-time.After(90 * time.Second):
		consumeErr = fmt.Errorf("timed out")
	}
	// Give the offset manager one commit interval, then close: Close commits what is marked.
	time.Sleep(500 * time.Millisecond)
	cancel()
	if err := cg.Close(); err != nil && consumeErr == nil {
		consumeErr = fmt.Errorf("Close: %v", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	err, detail := compare(produced, h.got, consumeErr)
	mu.Lock()
	defer mu.Unlock()
	if len(retried) > 0 {
		detail += fmt.Sprintf(" retried_joins=%d (%s)", len(retried), retried[0])
	}
	return err, detail
}

// groupOffsets: what the group committed, read back through ClusterAdmin (OffsetFetch v1 at the
// coordinator, ListGroups v0, DescribeGroups v0): the committed offsets add up to every message.
func groupOffsets(brokers []string, topic, group string, produced int) (error, string) {
	admin, err := sarama.NewClusterAdmin(brokers, config())
	if err != nil {
		return err, "NewClusterAdmin:"
	}
	defer admin.Close()
	client, err := sarama.NewClient(brokers, config())
	if err != nil {
		return err, "NewClient:"
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		return err, "Partitions:"
	}
	res, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: parts})
	if err != nil {
		return err, "ListConsumerGroupOffsets:"
	}
	var total int64
	var per []string
	for _, p := range parts {
		b := res.GetBlock(topic, p)
		if b == nil || b.Err != sarama.ErrNoError {
			return fmt.Errorf("partition %d has no committed offset (%v)", p, b), ""
		}
		total += b.Offset
		per = append(per, fmt.Sprintf("%d:%d", p, b.Offset))
	}
	sort.Strings(per)
	groups, err := admin.ListConsumerGroups()
	if err != nil {
		return err, "ListConsumerGroups:"
	}
	if _, ok := groups[group]; !ok {
		return fmt.Errorf("ListConsumerGroups does not list %s", group), ""
	}
	desc, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil {
		return err, "DescribeConsumerGroups:"
	}
	detail := fmt.Sprintf("committed=%s total=%d state=%s", strings.Join(per, ","), total, desc[0].State)
	if total != int64(produced) {
		return fmt.Errorf("committed offsets add up to %d, expected %d", total, produced), detail
	}
	return nil, detail
}

func compare(produced map[string]bool, got map[string]int, err error) (error, string) {
	missing, dup := 0, 0
	for v := range produced {
		if got[v] == 0 {
			missing++
		}
		if got[v] > 1 {
			dup++
		}
	}
	detail := fmt.Sprintf("read=%d missing=%d duplicated=%d", len(got), missing, dup)
	if err == nil && (missing > 0 || dup > 0 || len(got) != len(produced)) {
		err = fmt.Errorf("not exactly the produced messages")
	}
	return err, detail
}

// commitV1Refused: sarama's default offset manager (no Consumer.Offsets.Retention) commits with
// OffsetCommit v1. Kafka 4.0 removed v0-v1 (KIP-896) and closes the connection of a client that sends
// one; Skein serves OffsetCommit v2+ and does the same. The check passes when the v1 commit is refused
// and nothing is committed for the group.
func commitV1Refused(brokers []string, topic, group string) (error, string) {
	client, err := sarama.NewClient(brokers, config())
	if err != nil {
		return err, "NewClient:"
	}
	defer client.Close()
	coordinator, err := coordinatorOf(client, group)
	if err != nil {
		return err, "Coordinator:"
	}
	req := &sarama.OffsetCommitRequest{Version: 1, ConsumerGroup: group, ConsumerGroupGeneration: -1}
	req.AddBlock(topic, 0, 1, sarama.ReceiveTime, "")
	resp, err := coordinator.CommitOffset(req)
	if err == nil {
		return fmt.Errorf("OffsetCommit v1 was answered (%v)", resp.Errors), ""
	}
	detail := fmt.Sprintf("OffsetCommit v1 refused: %v", err)
	// The refused request closed the client's connection: read the group back through a new one.
	admin, err := sarama.NewClusterAdmin(brokers, config())
	if err != nil {
		return err, detail + "; NewClusterAdmin:"
	}
	defer admin.Close()
	res, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0}})
	if err != nil {
		return err, detail + "; ListConsumerGroupOffsets:"
	}
	if b := res.GetBlock(topic, 0); b == nil || b.Offset != -1 {
		return fmt.Errorf("something was committed: %v", b), detail
	}
	return nil, detail
}

// coordinatorOf finds the group's coordinator (FindCoordinator v0), retrying while
// __consumer_offsets is being created or loaded.
func coordinatorOf(client sarama.Client, group string) (*sarama.Broker, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := client.RefreshCoordinator(group)
		if err == nil {
			return client.Coordinator(group)
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// defaultVersion: with sarama's default Config.Version (0.8.2, its MinVersion) the producer sends
// Produce v0 (message format v0), which Kafka 4.0 refuses by closing the connection (it serves Produce
// v3+, advertising v0 only for librdkafka, KAFKA-18659) and Kafka 3.x serves, up-converting the message
// set; Skein serves it as Kafka 3.x does. The check passes when the message is written.
func defaultVersion(brokers []string, topic string) (error, string) {
	c := sarama.NewConfig()
	c.ClientID = "skein-compat-sarama-default-version"
	c.Producer.Return.Successes = true
	c.Producer.Retry.Max = 1
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	producer, err := sarama.NewSyncProducer(brokers, c)
	if err != nil {
		return err, "NewSyncProducer:"
	}
	defer producer.Close()
	p, offset, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("default-version")})
	if err != nil {
		return err, fmt.Sprintf("Config.Version %s: Produce v0:", c.Version)
	}
	return nil, fmt.Sprintf("Config.Version %s: Produce v0 written at %d/%d", c.Version, p, offset)
}
