// Checks Debian's confluent-kafka-go (golang-github-confluentinc-confluent-kafka-go-dev 0.11.6, cgo over
// Debian's librdkafka 2.0.2, which negotiates versions with ApiVersions) against a Kafka-compatible
// cluster: metadata, topic creation through the AdminClient, an idempotent acks=all producer, and a
// consumer group that reads everything and commits. Each check prints one JSON line
// {"client","check","ok","detail"}; the exit code is 0 only if every check passed.
//
// Usage: confluent-kafka-go -brokers host:port[,...] -topic T -group G [-messages N] [-checks a,b,...]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/kafka"
)

const clientName = "confluent-kafka-go"

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
	brokers := flag.String("brokers", "", "bootstrap servers, comma-separated")
	topic := flag.String("topic", "go-confluent", "topic to create and use")
	group := flag.String("group", "go-confluent-group", "consumer group id")
	messages := flag.Int("messages", 30, "messages to produce")
	partitions := flag.Int("partitions", 3, "partitions of the topic")
	replicas := flag.Int("replicas", 3, "replication factor of the topic")
	expectBrokers := flag.Int("expect-brokers", 3, "brokers the metadata must list")
	checksFlag := flag.String("checks", "metadata,create_topic,produce_idempotent,group_commit", "checks to run")
	flag.Parse()
	if *brokers == "" {
		fmt.Fprintln(os.Stderr, "usage: confluent-kafka-go -brokers host:port[,...] [-topic T] [-group G]")
		os.Exit(2)
	}
	want := map[string]bool{}
	for _, c := range strings.Split(*checksFlag, ",") {
		want[strings.TrimSpace(c)] = true
	}
	_, libVersion := kafka.LibraryVersion()
	fmt.Fprintf(os.Stderr, "librdkafka %s\n", libVersion)
	if want["metadata"] {
		check("metadata", func() (error, string) { return metadata(*brokers, *expectBrokers) })
	}
	if want["create_topic"] {
		check("create_topic", func() (error, string) { return createTopic(*brokers, *topic, *partitions, *replicas) })
	}
	produced := map[string]bool{}
	if want["produce_idempotent"] {
		check("produce_idempotent", func() (error, string) { return produce(*brokers, *topic, *messages, produced) })
	}
	if want["group_commit"] {
		check("group_commit", func() (error, string) { return groupConsume(*brokers, *topic, *group, produced) })
	}
	if failed {
		os.Exit(1)
	}
}

// metadata: the AdminClient's Metadata lists every broker.
func metadata(brokers string, expect int) (error, string) {
	a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": brokers})
	if err != nil {
		return err, "NewAdminClient:"
	}
	defer a.Close()
	md, err := a.GetMetadata(nil, true, 20000)
	if err != nil {
		return err, "GetMetadata:"
	}
	detail := fmt.Sprintf("brokers=%d topics=%d", len(md.Brokers), len(md.Topics))
	if len(md.Brokers) != expect {
		return fmt.Errorf("expected %d brokers", expect), detail
	}
	return nil, detail
}

// createTopic: AdminClient.CreateTopics (librdkafka picks CreateTopics v4 against Skein) waiting for
// the operation, then the topic's metadata has every partition with a leader.
func createTopic(brokers, topic string, partitions, replicas int) (error, string) {
	a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": brokers})
	if err != nil {
		return err, "NewAdminClient:"
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := a.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: partitions, ReplicationFactor: replicas}}, kafka.SetAdminOperationTimeout(30*time.Second))
	if err != nil {
		return err, "CreateTopics:"
	}
	if len(res) != 1 || res[0].Error.Code() != kafka.ErrNoError {
		return fmt.Errorf("%v", res), "CreateTopics result:"
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := a.GetMetadata(&topic, false, 10000)
		if err == nil {
			t := md.Topics[topic]
			ready := t.Error.Code() == kafka.ErrNoError && len(t.Partitions) == partitions
			for _, p := range t.Partitions {
				if p.Leader < 0 || len(p.Replicas) != replicas {
					ready = false
				}
			}
			if ready {
				return nil, fmt.Sprintf("partitions=%d replicas=%d", partitions, replicas)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the topic's partitions have no leaders yet (%v)", err), ""
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// produce: enable.idempotence (InitProducerId, acks=all implied, set anyway), one delivery report per
// message, each without error.
func produce(brokers, topic string, n int, produced map[string]bool) (error, string) {
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": brokers, "enable.idempotence": true, "acks": "all", "linger.ms": 5})
	if err != nil {
		return err, "NewProducer:"
	}
	defer p.Close()
	reports := make(chan kafka.Event, n)
	for i := 0; i < n; i++ {
		value := fmt.Sprintf("confluent-%d", i)
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(value)}, reports); err != nil {
			return err, fmt.Sprintf("Produce %d:", i)
		}
	}
	timeout := time.After(60 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case ev := <-reports:
			m, ok := ev.(*kafka.Message)
			if !ok {
				return fmt.Errorf("unexpected event %v", ev), ""
			}
			if m.TopicPartition.Error != nil {
				return m.TopicPartition.Error, "delivery report:"
			}
			produced[string(m.Value)] = true
		case <-timeout:
			return fmt.Errorf("timed out after %d delivery reports", i), ""
		}
	}
	return nil, fmt.Sprintf("delivered=%d idempotent=true acks=all", len(produced))
}

// groupConsume: a subscribed consumer in a group reads every produced message from the earliest
// offset, commits synchronously, and Committed (OffsetFetch) returns offsets adding up to them all.
func groupConsume(brokers, topic, group string, produced map[string]bool) (error, string) {
	if len(produced) == 0 {
		return fmt.Errorf("nothing was produced"), ""
	}
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": brokers, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": false})
	if err != nil {
		return err, "NewConsumer:"
	}
	defer c.Close()
	if err := c.Subscribe(topic, nil); err != nil {
		return err, "Subscribe:"
	}
	got := map[string]int{}
	deadline := time.Now().Add(90 * time.Second)
	for len(got) < len(produced) && time.Now().Before(deadline) {
		m, err := c.ReadMessage(time.Second)
		if err != nil {
			if kerr, ok := err.(kafka.Error); ok && kerr.Code() == kafka.ErrTimedOut {
				continue
			}
			return err, "ReadMessage:"
		}
		got[string(m.Value)]++
	}
	missing := 0
	for v := range produced {
		if got[v] == 0 {
			missing++
		}
	}
	detail := fmt.Sprintf("read=%d missing=%d", len(got), missing)
	if missing > 0 {
		return fmt.Errorf("not every message was read"), detail
	}
	if _, err := c.Commit(); err != nil {
		return err, detail + "; Commit:"
	}
	assigned, err := c.Assignment()
	if err != nil {
		return err, detail + "; Assignment:"
	}
	committed, err := c.Committed(assigned, 20000)
	if err != nil {
		return err, detail + "; Committed:"
	}
	var total int64
	for _, tp := range committed {
		if tp.Offset >= 0 {
			total += int64(tp.Offset)
		}
	}
	detail += fmt.Sprintf(" committed_total=%d", total)
	if total != int64(len(produced)) {
		return fmt.Errorf("committed offsets add up to %d, expected %d", total, len(produced)), detail
	}
	return nil, detail
}
