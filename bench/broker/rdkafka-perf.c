/*
 * rdkafka-perf: a producer / consumer throughput tool on librdkafka, for the broker benchmark
 * (bench/broker.bench.ts), so that Skein's produce and consume figures are also measured with a client
 * that is not Skein's own. kcat drives the same library but parses every input line and formats every
 * message it reads, which costs it more CPU per record than the broker spends (on 2 shared cores kcat was
 * the limit); this tool keeps its own per-record work to the library call and a counter.
 *
 * Build (Debian: apt-get install -y librdkafka-dev gcc):
 *   cc -O2 -Wall -o rdkafka-perf rdkafka-perf.c -lrdkafka
 * bench/broker/rdkafka-perf.ts compiles it on demand into a cache directory keyed by this file's hash.
 *
 * Usage:
 *   rdkafka-perf produce -b BOOTSTRAP -t TOPIC -n RECORDS -s SIZE [-w IDLE_MS] [-X key=value ...]
 *   rdkafka-perf consume -b BOOTSTRAP -t TOPIC -n RECORDS [-w IDLE_MS] [-A queue|assign] [-X key=value ...]
 *
 * produce: RECORDS values of SIZE bytes, no key, to RD_KAFKA_PARTITION_UA (librdkafka's partitioner picks
 *   the partition). Every record points at one shared read-only payload, produced without
 *   RD_KAFKA_MSG_F_COPY: the values are identical, the buffer lives until the process exits (after the
 *   flush, so after every delivery report), and librdkafka copies small values into its request buffers
 *   anyway, so a per-record copy would only measure malloc and memcpy in this tool. The producer polls
 *   for delivery reports every 8192 records, and on RD_KAFKA_RESP_ERR__QUEUE_FULL polls (10 ms) and
 *   retries, then flushes until every delivery report has arrived. Elapsed time runs from the first
 *   produce call to the last delivery report.
 * consume: no consumer group. Every partition of TOPIC (from a metadata request) is started at
 *   RD_KAFKA_OFFSET_BEGINNING on one queue of the legacy (simple) consumer API, read with
 *   rd_kafka_consume_batch_queue, counting records and value bytes until RECORDS are read, or until
 *   nothing arrives for IDLE_MS. -A assign reads the same partitions through rd_kafka_assign on a
 *   consumer handle instead (which needs a group.id and so a group handle that looks up a coordinator,
 *   though it never joins). The two measured alike here (8 alternating runs of 2M records against one
 *   broker: queue 0.87-1.15M/s, assign 0.83-1.09M/s, the tool's CPU within the same noise), both being
 *   the same fetcher; the legacy queue is the default as the one without a group. Neither stores
 *   offsets (there is no group to commit them to). Elapsed time runs from starting the partitions
 *   (after the metadata request) to the batch that completes RECORDS.
 *
 * -X key=value sets any librdkafka configuration property (after this tool's defaults, so it wins).
 * -w IDLE_MS (default 10000): give up after this long without a delivery report / a record.
 *
 * Output: one JSON line on stdout,
 *   {"mode","records","bytes","elapsedMs","recordsPerSec","mbPerSec","errors","cpuMs"}
 * where records and bytes are what was delivered / read, mbPerSec is value bytes in MiB/s and cpuMs is
 * this process's user + system CPU (all threads, librdkafka's included) over the timed part.
 * Diagnostics go to stderr. Exit status: 0 when every record was delivered / read without an error,
 * 1 when not (delivery errors, fewer records than asked, consume errors), 2 on bad arguments or setup.
 */
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_RECORDS 10000000000LL /* bounds -n */
#define MAX_SIZE (16 * 1024 * 1024) /* bounds -s, the one payload allocation */
#define MAX_IDLE_MS 600000
#define CONSUME_BATCH 4096 /* messages per rd_kafka_consume_batch_queue call (a fixed array) */
#define POLL_EVERY 8192 /* produce calls between delivery report polls */
#define MAX_PRINTED_ERRORS 5

static double now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms(void) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
               ru.ru_stime.tv_usec / 1e3;
}

static void usage(void) {
        fprintf(stderr,
                "usage: rdkafka-perf produce -b BOOTSTRAP -t TOPIC -n RECORDS -s SIZE [-w IDLE_MS] [-X key=value ...]\n"
                "       rdkafka-perf consume -b BOOTSTRAP -t TOPIC -n RECORDS [-w IDLE_MS] [-A queue|assign] [-X key=value ...]\n");
}

/* Parses a decimal integer in [min, max]; returns 0 on success. */
static int parse_int(const char *s, long long min, long long max, long long *out) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v < min || v > max) return -1;
        *out = v;
        return 0;
}

static int set_conf(rd_kafka_conf_t *conf, const char *name, const char *value) {
        char errstr[512];
        if (rd_kafka_conf_set(conf, name, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
                fprintf(stderr, "rdkafka-perf: %s=%s: %s\n", name, value, errstr);
                return -1;
        }
        return 0;
}

/* -X key=value: split at the first '=' (the value may contain more). */
static int set_conf_pair(rd_kafka_conf_t *conf, const char *pair) {
        const char *eq = strchr(pair, '=');
        char name[256];
        if (eq == NULL || eq == pair || (size_t)(eq - pair) >= sizeof name) {
                fprintf(stderr, "rdkafka-perf: -X wants key=value, got '%s'\n", pair);
                return -1;
        }
        memcpy(name, pair, (size_t)(eq - pair));
        name[eq - pair] = '\0';
        return set_conf(conf, name, eq + 1);
}

static void print_result(const char *mode, long long records, long long bytes, double elapsed_ms,
                         long long errors, double cpu) {
        double s = elapsed_ms > 0 ? elapsed_ms / 1e3 : 0;
        printf("{\"mode\":\"%s\",\"records\":%lld,\"bytes\":%lld,\"elapsedMs\":%.3f,\"recordsPerSec\":%.1f,"
               "\"mbPerSec\":%.3f,\"errors\":%lld,\"cpuMs\":%.1f}\n",
               mode, records, bytes, elapsed_ms, s > 0 ? records / s : 0.0,
               s > 0 ? bytes / 1048576.0 / s : 0.0, errors, cpu);
        fflush(stdout);
}

/* --- produce --- */

static struct {
        long long delivered, failed, reported; /* reported = delivered + failed */
        long long expected;                    /* reports to wait for: records handed to librdkafka */
        double last_ms;                        /* time of the last delivery report */
} dr;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err) {
                if (dr.failed++ < MAX_PRINTED_ERRORS)
                        fprintf(stderr, "rdkafka-perf: delivery failed: %s\n", rd_kafka_err2str(m->err));
        } else {
                dr.delivered++;
        }
        if (++dr.reported == dr.expected) dr.last_ms = now_ms();
}

static int produce(rd_kafka_conf_t *conf, const char *topic, long long records, long long size, int idle_ms) {
        char errstr[512];
        rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
        if (rk == NULL) {
                fprintf(stderr, "rdkafka-perf: %s\n", errstr);
                rd_kafka_conf_destroy(conf);
                return 2;
        }
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        /* One shared payload (see the header: no copy, lives until exit). size 0 is an empty value, not a
         * null one, so the pointer is never NULL. */
        char *payload = malloc(size > 0 ? (size_t)size : 1);
        if (rkt == NULL || payload == NULL) {
                fprintf(stderr, "rdkafka-perf: setup failed: %s\n", rkt == NULL ? rd_kafka_err2str(rd_kafka_last_error()) : "out of memory");
                free(payload);
                if (rkt != NULL) rd_kafka_topic_destroy(rkt);
                rd_kafka_destroy(rk);
                return 2;
        }
        memset(payload, 'k', size > 0 ? (size_t)size : 1);

        long long errors = 0, sent = 0;
        dr.expected = records;
        double cpu0 = cpu_ms(), t0 = now_ms();
        while (sent < records) {
                if (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, 0, payload, (size_t)size, NULL, 0, NULL) == 0) {
                        if (++sent % POLL_EVERY == 0) rd_kafka_poll(rk, 0);
                        continue;
                }
                rd_kafka_resp_err_t err = rd_kafka_last_error();
                if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                        /* The local queue is at queue.buffering.max.*: serve delivery reports, then retry. */
                        rd_kafka_poll(rk, 10);
                        continue;
                }
                fprintf(stderr, "rdkafka-perf: produce failed after %lld records: %s\n", sent, rd_kafka_err2str(err));
                errors++;
                break;
        }
        /* Wait for every delivery report; give up when none arrives for idle_ms. */
        dr.expected = sent;
        if (sent > 0 && dr.reported == sent && dr.last_ms == 0) dr.last_ms = now_ms();
        long long seen = dr.reported;
        double progress_ms = now_ms();
        while (dr.reported < sent) {
                rd_kafka_flush(rk, 100);
                if (dr.reported != seen) {
                        seen = dr.reported;
                        progress_ms = now_ms();
                } else if (now_ms() - progress_ms > idle_ms) {
                        fprintf(stderr, "rdkafka-perf: no delivery report for %d ms, %lld of %lld outstanding\n",
                                idle_ms, sent - dr.reported, sent);
                        break;
                }
        }
        double end_ms = dr.reported == sent && sent > 0 ? dr.last_ms : now_ms();
        double cpu = cpu_ms() - cpu0;
        errors += dr.failed + (sent - dr.reported);
        print_result("produce", dr.delivered, dr.delivered * size, end_ms - t0, errors, cpu);

        rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(rk);
        free(payload);
        return errors == 0 && dr.delivered == records ? 0 : 1;
}

/* --- consume --- */

static int consume(rd_kafka_conf_t *conf, const char *topic, long long records, int idle_ms, int use_assign) {
        char errstr[512];
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
        if (rk == NULL) {
                fprintf(stderr, "rdkafka-perf: %s\n", errstr);
                rd_kafka_conf_destroy(conf);
                return 2;
        }
        int status = 2;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_queue_t *q = NULL;
        rd_kafka_topic_partition_list_t *assignment = NULL;
        int started = 0; /* legacy partitions started (to stop them) */
        if (rkt == NULL) {
                fprintf(stderr, "rdkafka-perf: topic handle: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
                goto out;
        }
        rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
        if (err) {
                fprintf(stderr, "rdkafka-perf: metadata: %s\n", rd_kafka_err2str(err));
                goto out;
        }
        if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt <= 0) {
                fprintf(stderr, "rdkafka-perf: topic %s: %s\n", topic,
                        md->topic_cnt == 1 && md->topics[0].err ? rd_kafka_err2str(md->topics[0].err) : "no partitions");
                goto out;
        }
        const rd_kafka_metadata_topic_t *mt = &md->topics[0];

        double cpu0 = cpu_ms(), t0 = now_ms();
        if (use_assign) {
                /* No subscribe(): a static assignment, but librdkafka still creates the group handle. */
                assignment = rd_kafka_topic_partition_list_new(mt->partition_cnt);
                for (int i = 0; i < mt->partition_cnt; i++)
                        rd_kafka_topic_partition_list_add(assignment, topic, mt->partitions[i].id)->offset = RD_KAFKA_OFFSET_BEGINNING;
                if ((err = rd_kafka_poll_set_consumer(rk)) || (err = rd_kafka_assign(rk, assignment))) {
                        fprintf(stderr, "rdkafka-perf: assign: %s\n", rd_kafka_err2str(err));
                        goto out;
                }
                q = rd_kafka_queue_get_consumer(rk);
        } else {
                q = rd_kafka_queue_new(rk);
                for (; started < mt->partition_cnt; started++) {
                        if (rd_kafka_consume_start_queue(rkt, mt->partitions[started].id, RD_KAFKA_OFFSET_BEGINNING, q) == -1) {
                                fprintf(stderr, "rdkafka-perf: start partition %d: %s\n", mt->partitions[started].id,
                                        rd_kafka_err2str(rd_kafka_last_error()));
                                goto out;
                        }
                }
        }

        static rd_kafka_message_t *batch[CONSUME_BATCH];
        long long count = 0, bytes = 0, errors = 0;
        double end_ms = t0, progress_ms = t0;
        while (count < records) {
                ssize_t got = rd_kafka_consume_batch_queue(q, 100, batch, CONSUME_BATCH);
                if (got < 0) {
                        fprintf(stderr, "rdkafka-perf: consume: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
                        errors++;
                        break;
                }
                for (ssize_t i = 0; i < got; i++) {
                        rd_kafka_message_t *m = batch[i];
                        if (m->err == 0) {
                                count++;
                                bytes += (long long)m->len;
                        } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                                if (errors++ < MAX_PRINTED_ERRORS)
                                        fprintf(stderr, "rdkafka-perf: consume error: %s\n", rd_kafka_message_errstr(m));
                        }
                        rd_kafka_message_destroy(m);
                }
                double t = now_ms();
                if (got > 0) {
                        end_ms = progress_ms = t;
                } else if (t - progress_ms > idle_ms) {
                        fprintf(stderr, "rdkafka-perf: no record for %d ms after %lld of %lld\n", idle_ms, count, records);
                        break;
                }
        }
        double cpu = cpu_ms() - cpu0;
        print_result("consume", count, bytes, end_ms - t0, errors, cpu);
        status = errors == 0 && count >= records ? 0 : 1;

out:
        if (q != NULL) rd_kafka_queue_destroy(q);
        if (assignment != NULL) {
                rd_kafka_consumer_close(rk);
                rd_kafka_topic_partition_list_destroy(assignment);
        }
        for (int i = 0; i < started; i++) rd_kafka_consume_stop(rkt, md->topics[0].partitions[i].id);
        if (md != NULL) rd_kafka_metadata_destroy(md);
        if (rkt != NULL) rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(rk);
        return status;
}

int main(int argc, char **argv) {
        if (argc < 2 || (strcmp(argv[1], "produce") != 0 && strcmp(argv[1], "consume") != 0)) {
                usage();
                return 2;
        }
        int producing = strcmp(argv[1], "produce") == 0;
#if defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD)
        /* With glibc's allocator defaults librdkafka keeps faulting in fresh pages: each Fetch response
         * (megabytes) is received into a block that is mmap'd and unmapped again per response, and the
         * producer's per-record message objects, freed in bulk as batches are acknowledged, shrink the heap
         * back to the kernel; either way the pages are faulted in again for the next use (in perf, page
         * faults under the socket receive copy were the largest single cost of this tool's consume). Serving large blocks
         * from the heap and keeping freed memory there reuses the same pages: in A/B runs this cut the
         * tool's CPU per record by 25-40% (consume 0.8 s instead of 1.2-2.9 s CPU for 2M records; produce
         * 0.7 s instead of 0.9-1.2 s for 1M). Only this process's allocator is tuned, not the broker's. */
        mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
        mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
#endif
        const char *bootstrap = NULL, *topic = NULL;
        long long records = -1, size = -1, idle_ms = 10000;
        int use_assign = 0;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        /* Defaults of this tool (before -X, which overrides them). The consumer stores no offsets: there is
         * no group to commit them to. */
        if (!producing && (set_conf(conf, "enable.auto.commit", "false") || set_conf(conf, "enable.auto.offset.store", "false")))
                goto bad;

        int opt;
        optind = 2; /* after the mode */
        while ((opt = getopt(argc, argv, "b:t:n:s:w:X:A:")) != -1) {
                switch (opt) {
                case 'b': bootstrap = optarg; break;
                case 't': topic = optarg; break;
                case 'n':
                        if (parse_int(optarg, 1, MAX_RECORDS, &records)) {
                                fprintf(stderr, "rdkafka-perf: -n wants 1..%lld records\n", MAX_RECORDS);
                                goto bad;
                        }
                        break;
                case 's':
                        if (parse_int(optarg, 0, MAX_SIZE, &size)) {
                                fprintf(stderr, "rdkafka-perf: -s wants 0..%d bytes\n", MAX_SIZE);
                                goto bad;
                        }
                        break;
                case 'w':
                        if (parse_int(optarg, 1, MAX_IDLE_MS, &idle_ms)) {
                                fprintf(stderr, "rdkafka-perf: -w wants 1..%d ms\n", MAX_IDLE_MS);
                                goto bad;
                        }
                        break;
                case 'A':
                        if (strcmp(optarg, "assign") == 0) use_assign = 1;
                        else if (strcmp(optarg, "queue") == 0) use_assign = 0;
                        else {
                                fprintf(stderr, "rdkafka-perf: -A wants queue or assign\n");
                                goto bad;
                        }
                        break;
                case 'X':
                        if (set_conf_pair(conf, optarg)) goto bad;
                        break;
                default: usage(); goto bad;
                }
        }
        if (optind != argc || bootstrap == NULL || topic == NULL || records < 0 || (producing && size < 0) ||
            (!producing && size >= 0)) {
                usage();
                goto bad;
        }
        if (set_conf(conf, "bootstrap.servers", bootstrap)) goto bad;
        /* The consumer's group handle (only -A assign uses it) needs a group.id; it never joins. */
        if (!producing && use_assign) {
                char gid[8];
                size_t gid_len = sizeof gid;
                if (rd_kafka_conf_get(conf, "group.id", gid, &gid_len) != RD_KAFKA_CONF_OK || gid_len <= 1)
                        if (set_conf(conf, "group.id", "rdkafka-perf")) goto bad;
        }
        /* conf is owned by the client from here on. */
        return producing ? produce(conf, topic, records, size, (int)idle_ms)
                         : consume(conf, topic, records, (int)idle_ms, use_assign);
bad:
        rd_kafka_conf_destroy(conf);
        return 2;
}
