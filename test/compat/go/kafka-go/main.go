// Checks Debian's kafka-go (golang-github-segmentio-kafka-go-dev 0.2.1) against a Kafka-compatible
// cluster. kafka-go 0.2.1 predates ApiVersions negotiation: it hard-codes its request versions
// (Metadata v1, CreateTopics v0, Produce v2, Fetch v2, ListOffsets v1, FindCoordinator v0, JoinGroup v1,
// SyncGroup v0, Heartbeat v0, OffsetCommit v2, OffsetFetch v1). Kafka 4.0 removed CreateTopics v0-v1,
// Produce v0-v2 and Fetch v0-v3 (KIP-896), so against a 4.0 broker, or Skein, those checks fail with the
// connection closed; the others work. Each check prints one JSON line {"client","check","ok","detail"};
// the exit code is 0 only if every check passed.
//
// Usage: kafka-go -brokers host:port[,...] -topic T (an existing topic) -create-topic T2 -group G [-checks a,b,...]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	kafka "github.com/segmentio/kafka-go"
)

const clientName = "kafka-go"

var failed bool

func check(name string, f func() (error, string)) {
	err, detail := f()
	line := map[string]interface{}{"client": clientName, "check": name, "ok": err == nil, "detail": detail}
	if err != nil {
		failed = true
		line["detail"] = strings.TrimSpace(detail + " " + err.Error())
	}
	out, _ := json.Marshal(line)
	fmt.Println(string(out))
}

func main() {
	brokersFlag := flag.String("brokers", "", "bootstrap servers, comma-separated")
	topic := flag.String("topic", "", "an existing topic holding messages (metadata, consume, group checks)")
	createTopic := flag.String("create-topic", "go-kafka-go-created", "topic the create_topic check creates")
	group := flag.String("group", "go-kafka-go-group", "consumer group id")
	checksFlag := flag.String("checks", "metadata,create_topic,produce,consume,group_commit", "checks to run")
	flag.Parse()
	if *brokersFlag == "" || *topic == "" {
		fmt.Fprintln(os.Stderr, "usage: kafka-go -brokers host:port[,...] -topic T [-create-topic T2] [-group G]")
		os.Exit(2)
	}
	brokers := strings.Split(*brokersFlag, ",")
	want := map[string]bool{}
	for _, c := range strings.Split(*checksFlag, ",") {
		want[strings.TrimSpace(c)] = true
	}
	if want["metadata"] {
		check("metadata", func() (error, string) { return metadata(brokers[0], *topic) })
	}
	if want["create_topic"] {
		check("create_topic", func() (error, string) { return create(brokers[0], *createTopic) })
	}
	if want["produce"] {
		check("produce", func() (error, string) { return produce(brokers, *topic) })
	}
	if want["consume"] {
		check("consume", func() (error, string) { return consume(brokers[0], *topic) })
	}
	if want["group_commit"] {
		check("group_commit", func() (error, string) { return groupCommit(brokers, *topic, *group) })
	}
	if failed {
		os.Exit(1)
	}
}

// metadata: Metadata v1 for the topic, through any broker: every partition has a leader and replicas.
func metadata(broker, topic string) (error, string) {
	conn, err := kafka.Dial("tcp", broker)
	if err != nil {
		return err, "Dial:"
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		return err, "ReadPartitions:"
	}
	brokersSeen := map[int]bool{}
	for _, p := range parts {
		if p.Leader.ID < 0 || len(p.Replicas) == 0 {
			return fmt.Errorf("partition %d has no leader", p.ID), ""
		}
		for _, r := range p.Replicas {
			brokersSeen[r.ID] = true
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("no partitions"), ""
	}
	return nil, fmt.Sprintf("partitions=%d brokers_in_replicas=%d", len(parts), len(brokersSeen))
}

// create: Conn.CreateTopics (CreateTopics v0) sent to the controller named by Metadata v1.
func create(broker, topic string) (error, string) {
	conn, err := kafka.Dial("tcp", broker)
	if err != nil {
		return err, "Dial:"
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if err := conn.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 3, ReplicationFactor: 3}); err != nil {
		return err, "CreateTopics v0:"
	}
	return nil, "created"
}

// produce: a Writer with RequiredAcks=-1 (all) writes one batch (Produce v2, message format v1).
func produce(brokers []string, topic string) (error, string) {
	w := kafka.NewWriter(kafka.WriterConfig{Brokers: brokers, Topic: topic, RequiredAcks: -1, MaxAttempts: 2, BatchSize: 5, BatchTimeout: 10 * time.Millisecond})
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var msgs []kafka.Message
	for i := 0; i < 5; i++ {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("kafka-go-%d", i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		return err, "WriteMessages (Produce v2):"
	}
	return nil, fmt.Sprintf("written=%d acks=all", len(msgs))
}

// consume: a fetch (Fetch v2) from the leader of partition 0, from its first offset.
func consume(broker, topic string) (error, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := kafka.DialLeader(ctx, "tcp", broker, topic, 0)
	if err != nil {
		return err, "DialLeader:"
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Seek(0, kafka.SeekStart); err != nil {
		return err, "Seek (ListOffsets v1):"
	}
	batch := conn.ReadBatch(1, 1<<20)
	n := 0
	own := 0
	for {
		m, err := batch.ReadMessage()
		if err != nil {
			break
		}
		// Every message once, in order, with the timestamp it was written with (message format v1).
		if m.Offset != int64(n) {
			batch.Close()
			return fmt.Errorf("message %d has offset %d", n, m.Offset), ""
		}
		if m.Time.IsZero() || m.Time.Year() < 2000 {
			batch.Close()
			return fmt.Errorf("message %d has no timestamp (%v)", n, m.Time), ""
		}
		if strings.HasPrefix(string(m.Value), "kafka-go-") {
			own++
		}
		n++
	}
	if err := batch.Close(); err != nil {
		return err, fmt.Sprintf("ReadBatch (Fetch v2) after %d messages:", n)
	}
	if n == 0 {
		return fmt.Errorf("no messages"), ""
	}
	return nil, fmt.Sprintf("read=%d own=%d", n, own)
}

// groupCommit: a group Reader joins (FindCoordinator v0, JoinGroup v1, SyncGroup v0, OffsetFetch v1)
// and commits offset 1 of every partition synchronously (OffsetCommit v2). The caller reads the
// committed offsets back with another client.
func groupCommit(brokers []string, topic, group string) (error, string) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, GroupID: group, HeartbeatInterval: time.Second, SessionTimeout: 10 * time.Second, MaxWait: 500 * time.Millisecond})
	defer r.Close()
	conn, err := kafka.Dial("tcp", brokers[0])
	if err != nil {
		return err, "Dial:"
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		return err, "ReadPartitions:"
	}
	var commits []kafka.Message
	for _, p := range parts {
		// A commit of message at offset 0 stores offset 1, the next one to read.
		commits = append(commits, kafka.Message{Topic: topic, Partition: p.ID, Offset: 0})
	}
	// The commit waits for the reader to join the group; a join refused while __consumer_offsets
	// loads is retried by the reader itself.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.CommitMessages(ctx, commits...); err != nil {
		return err, "CommitMessages (OffsetCommit v2):"
	}
	return nil, fmt.Sprintf("committed offset 1 on %d partitions", len(commits))
}
