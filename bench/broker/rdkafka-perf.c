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
 *   rdkafka-perf latency -b BOOTSTRAP -t TOPIC -r RATE -d SECONDS [-X producer key=value ...] [-C consumer key=value ...]
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
 * latency: end-to-end latency at a fixed rate, with a producer and a consumer handle in this one process
 *   (so both read the same CLOCK_MONOTONIC). The consumer (legacy API, one queue, its own thread) starts
 *   every partition of TOPIC at its high watermark, queried before the first record is sent, so the
 *   first records are measured too. The producer thread wakes every millisecond (absolute deadlines) and
 *   hands librdkafka the records due by then, RATE a second for SECONDS: 100-byte values whose first 8
 *   bytes are the send time, no key (librdkafka's partitioner spreads them over the partitions). Its
 *   defaults are acks=all, enable.idempotence=true and linger.ms=0 (latency, not batching, is
 *   measured); the consumer's fetch.wait.max.ms=100 and fetch.min.bytes=1. -X and -C override them.
 *   e2e is send time to the record's arrival in the consumer thread; ack is send time to its delivery
 *   report (served by the producer thread between ticks, so up to a tick late); first3s and the
 *   per-second series count from the first record consumed, as bench/broker/e2e-latency.ts does.
 *   Output: {"mode":"latency","sent","acked","failed","consumed","ratePerSec","e2eMs":{...},
 *   "first3sMs":{...},"ackMs":{...},"series":[{"second","records","p50Ms","p99Ms","maxMs"}],"cpuMs"}
 *   where each {...} is {"count","avg","p50","p99","p999","max"}; exit 1 when a record failed or was
 *   not consumed within 10 s of the last send.
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
#include <pthread.h>
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
                "       rdkafka-perf consume -b BOOTSTRAP -t TOPIC -n RECORDS [-w IDLE_MS] [-A queue|assign] [-X key=value ...]\n"
                "       rdkafka-perf latency -b BOOTSTRAP -t TOPIC -r RATE -d SECONDS [-X key=value ...] [-C key=value ...]\n");
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

/* --- latency --- */

#define LATENCY_VALUE_SIZE 100
#define MAX_RATE 1000000
#define MAX_SECONDS 3600
#define MAX_SERIES 4000 /* per-second windows (MAX_SECONDS plus the drain) */

static double ns_now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* Latencies in milliseconds, appended by one thread, read after it has stopped. */
struct samples {
        double *ms;
        long long count, capacity;
};

static void samples_add(struct samples *s, double ms) {
        if (s->count < s->capacity) s->ms[s->count++] = ms;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

/* Sorts s in place; nearest-rank percentile. */
static double pct(const struct samples *s, double q) {
        if (s->count == 0) return 0;
        long long i = (long long)(q * s->count);
        if (i >= s->count) i = s->count - 1;
        return s->ms[i];
}

static void print_samples(const char *name, struct samples *s, int last) {
        qsort(s->ms, (size_t)s->count, sizeof(double), cmp_double);
        double sum = 0;
        for (long long i = 0; i < s->count; i++) sum += s->ms[i];
        printf("\"%s\":{\"count\":%lld,\"avg\":%.3f,\"p50\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f}%s", name,
               s->count, s->count > 0 ? sum / s->count : 0.0, pct(s, 0.5), pct(s, 0.99), pct(s, 0.999),
               s->count > 0 ? s->ms[s->count - 1] : 0.0, last ? "" : ",");
}

static struct {
        struct samples ack;
        long long acked, failed;
} lat_dr;

static void on_latency_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err) {
                if (lat_dr.failed++ < MAX_PRINTED_ERRORS)
                        fprintf(stderr, "rdkafka-perf: delivery failed: %s\n", rd_kafka_err2str(m->err));
                return;
        }
        lat_dr.acked++;
        double sent_ns;
        memcpy(&sent_ns, m->payload, sizeof sent_ns);
        samples_add(&lat_dr.ack, (ns_now() - sent_ns) / 1e6);
}

struct consumer_state {
        rd_kafka_queue_t *q;
        volatile long long target; /* records to read before stopping; -1 while the producer runs */
        volatile int stop;
        long long consumed, errors;
        struct samples e2e, first3s;
        double first_ns;
        /* per second from the first record consumed */
        struct samples window;
        double window_start_ns;
        int series_count;
        struct { long long records; double p50, p99, max; } series[MAX_SERIES];
};

static void close_window(struct consumer_state *c) {
        if (c->series_count >= MAX_SERIES) return;
        struct samples *w = &c->window;
        qsort(w->ms, (size_t)w->count, sizeof(double), cmp_double);
        c->series[c->series_count].records = w->count;
        c->series[c->series_count].p50 = pct(w, 0.5);
        c->series[c->series_count].p99 = pct(w, 0.99);
        c->series[c->series_count].max = w->count > 0 ? w->ms[w->count - 1] : 0;
        c->series_count++;
        w->count = 0;
}

static void *consume_latency(void *arg) {
        struct consumer_state *c = arg;
        double idle_since = 0;
        while (!c->stop) {
                rd_kafka_message_t *m = rd_kafka_consume_queue(c->q, 100);
                double now = ns_now();
                if (m == NULL) {
                        /* After the producer is done: stop once every record is read, or 10 s without one. */
                        if (c->target >= 0) {
                                if (idle_since == 0) idle_since = now;
                                else if (now - idle_since > 10e9) break;
                        }
                        continue;
                }
                idle_since = 0;
                if (m->err) {
                        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && c->errors++ < MAX_PRINTED_ERRORS)
                                fprintf(stderr, "rdkafka-perf: consume error: %s\n", rd_kafka_message_errstr(m));
                        rd_kafka_message_destroy(m);
                        continue;
                }
                if (m->len >= sizeof(double)) {
                        double sent_ns;
                        memcpy(&sent_ns, m->payload, sizeof sent_ns);
                        double ms = (now - sent_ns) / 1e6;
                        if (c->first_ns == 0) c->first_ns = c->window_start_ns = now;
                        while (now - c->window_start_ns >= 1e9) {
                                close_window(c);
                                c->window_start_ns += 1e9;
                        }
                        samples_add(&c->window, ms);
                        samples_add(&c->e2e, ms);
                        if (now - c->first_ns < 3e9) samples_add(&c->first3s, ms);
                }
                c->consumed++;
                rd_kafka_message_destroy(m);
                if (c->target >= 0 && c->consumed >= c->target) break;
        }
        if (c->window.count > 0) close_window(c);
        return NULL;
}

static int samples_init(struct samples *s, long long capacity) {
        s->count = 0;
        s->capacity = capacity;
        s->ms = malloc((size_t)capacity * sizeof(double));
        return s->ms == NULL ? -1 : 0;
}

static int latency(rd_kafka_conf_t *pconf, rd_kafka_conf_t *cconf, const char *topic, long long rate, long long seconds) {
        char errstr[512];
        int status = 2;
        rd_kafka_t *producer = NULL, *consumer = NULL;
        rd_kafka_topic_t *ptopic = NULL, *ctopic = NULL;
        const struct rd_kafka_metadata *md = NULL;
        static struct consumer_state c; /* large (the series): not on the stack */
        int started = 0, thread_started = 0;
        pthread_t thread;
        long long records = rate * seconds;
        rd_kafka_conf_set_dr_msg_cb(pconf, on_latency_delivery);
        if (samples_init(&lat_dr.ack, records) || samples_init(&c.e2e, records) || samples_init(&c.first3s, rate * 3) ||
            samples_init(&c.window, rate + rate / 2 + 1000)) {
                fprintf(stderr, "rdkafka-perf: out of memory for %lld latencies\n", records);
                rd_kafka_conf_destroy(pconf);
                rd_kafka_conf_destroy(cconf);
                return 2;
        }
        c.target = -1;
        consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, errstr, sizeof errstr);
        if (consumer == NULL) {
                fprintf(stderr, "rdkafka-perf: consumer: %s\n", errstr);
                rd_kafka_conf_destroy(cconf);
                rd_kafka_conf_destroy(pconf);
                return 2;
        }
        producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, errstr, sizeof errstr);
        if (producer == NULL) {
                fprintf(stderr, "rdkafka-perf: producer: %s\n", errstr);
                rd_kafka_conf_destroy(pconf);
                goto out;
        }
        ctopic = rd_kafka_topic_new(consumer, topic, NULL);
        ptopic = rd_kafka_topic_new(producer, topic, NULL);
        if (ctopic == NULL || ptopic == NULL) {
                fprintf(stderr, "rdkafka-perf: topic handle: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
                goto out;
        }
        rd_kafka_resp_err_t err = rd_kafka_metadata(consumer, 0, ctopic, &md, 10000);
        if (err || md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt <= 0) {
                fprintf(stderr, "rdkafka-perf: metadata of %s: %s\n", topic,
                        err ? rd_kafka_err2str(err) : md->topic_cnt == 1 && md->topics[0].err ? rd_kafka_err2str(md->topics[0].err) : "no partitions");
                goto out;
        }
        /* The producer's metadata too, so that its first records do not wait for it. */
        const struct rd_kafka_metadata *pmd = NULL;
        if ((err = rd_kafka_metadata(producer, 0, ptopic, &pmd, 10000)) == 0) rd_kafka_metadata_destroy(pmd);
        c.q = rd_kafka_queue_new(consumer);
        for (; started < md->topics[0].partition_cnt; started++) {
                int32_t id = md->topics[0].partitions[started].id;
                int64_t low, high;
                if ((err = rd_kafka_query_watermark_offsets(consumer, topic, id, &low, &high, 10000)) ||
                    rd_kafka_consume_start_queue(ctopic, id, high, c.q) == -1) {
                        fprintf(stderr, "rdkafka-perf: start partition %d: %s\n", id,
                                rd_kafka_err2str(err ? err : rd_kafka_last_error()));
                        goto out;
                }
        }
        if (pthread_create(&thread, NULL, consume_latency, &c) != 0) {
                fprintf(stderr, "rdkafka-perf: cannot start the consumer thread\n");
                goto out;
        }
        thread_started = 1;

        char value[LATENCY_VALUE_SIZE];
        memset(value, 'a', sizeof value);
        long long sent = 0, errors = 0;
        double cpu0 = cpu_ms();
        struct timespec tick;
        clock_gettime(CLOCK_MONOTONIC, &tick);
        double t0 = ns_now(), end = t0 + seconds * 1e9;
        for (;;) {
                double now = ns_now();
                if (now >= end) break;
                long long due = (long long)((now - t0) / 1e9 * rate);
                for (; sent < due; sent++) {
                        double send_ns = ns_now();
                        memcpy(value, &send_ns, sizeof send_ns);
                        while (rd_kafka_produce(ptopic, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, value, sizeof value, NULL, 0, NULL) != 0) {
                                if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                                        fprintf(stderr, "rdkafka-perf: produce failed: %s\n", rd_kafka_err2str(rd_kafka_last_error()));
                                        errors++;
                                        goto drain;
                                }
                                rd_kafka_poll(producer, 1);
                        }
                }
                rd_kafka_poll(producer, 0);
                tick.tv_nsec += 1000000;
                if (tick.tv_nsec >= 1000000000) {
                        tick.tv_sec++;
                        tick.tv_nsec -= 1000000000;
                }
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL);
        }
drain:;
        double send_end = ns_now();
        while (lat_dr.acked + lat_dr.failed < sent && ns_now() - send_end < 30e9) rd_kafka_flush(producer, 100);
        c.target = lat_dr.acked;
        pthread_join(thread, NULL);
        thread_started = 0;
        double cpu = cpu_ms() - cpu0;
        double elapsed = (send_end - t0) / 1e9;
        printf("{\"mode\":\"latency\",\"sent\":%lld,\"acked\":%lld,\"failed\":%lld,\"consumed\":%lld,\"ratePerSec\":%.1f,", sent,
               lat_dr.acked, lat_dr.failed + errors, c.consumed, elapsed > 0 ? sent / elapsed : 0.0);
        print_samples("e2eMs", &c.e2e, 0);
        print_samples("first3sMs", &c.first3s, 0);
        print_samples("ackMs", &lat_dr.ack, 0);
        printf("\"series\":[");
        for (int i = 0; i < c.series_count; i++)
                printf("%s{\"second\":%d,\"records\":%lld,\"p50Ms\":%.3f,\"p99Ms\":%.3f,\"maxMs\":%.3f}", i ? "," : "", i + 1,
                       c.series[i].records, c.series[i].p50, c.series[i].p99, c.series[i].max);
        printf("],\"cpuMs\":%.1f}\n", cpu);
        fflush(stdout);
        status = lat_dr.failed + errors + c.errors == 0 && lat_dr.acked == sent && c.consumed >= sent ? 0 : 1;
        if (c.consumed < sent) fprintf(stderr, "rdkafka-perf: consumed %lld of %lld records\n", c.consumed, sent);

out:
        if (thread_started) {
                c.stop = 1;
                pthread_join(thread, NULL);
        }
        for (int i = 0; i < started; i++) rd_kafka_consume_stop(ctopic, md->topics[0].partitions[i].id);
        if (c.q != NULL) rd_kafka_queue_destroy(c.q);
        if (md != NULL) rd_kafka_metadata_destroy(md);
        if (ctopic != NULL) rd_kafka_topic_destroy(ctopic);
        if (ptopic != NULL) rd_kafka_topic_destroy(ptopic);
        if (producer != NULL) rd_kafka_destroy(producer);
        rd_kafka_destroy(consumer);
        return status;
}

int main(int argc, char **argv) {
        if (argc < 2 || (strcmp(argv[1], "produce") != 0 && strcmp(argv[1], "consume") != 0 && strcmp(argv[1], "latency") != 0)) {
                usage();
                return 2;
        }
        int producing = strcmp(argv[1], "produce") == 0;
        int measuring_latency = strcmp(argv[1], "latency") == 0;
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
        long long rate = -1, seconds = -1;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        /* latency: conf is the producer's, cconf the consumer's (-C). */
        rd_kafka_conf_t *cconf = rd_kafka_conf_new();
        /* Defaults of this tool (before -X / -C, which override them). The consumer stores no offsets: there
         * is no group to commit them to. */
        if (!producing && !measuring_latency && (set_conf(conf, "enable.auto.commit", "false") || set_conf(conf, "enable.auto.offset.store", "false")))
                goto bad;
        if (measuring_latency &&
            (set_conf(conf, "acks", "all") || set_conf(conf, "enable.idempotence", "true") || set_conf(conf, "linger.ms", "0") ||
             set_conf(cconf, "fetch.wait.max.ms", "100") || set_conf(cconf, "fetch.min.bytes", "1") ||
             set_conf(cconf, "enable.auto.commit", "false") || set_conf(cconf, "enable.auto.offset.store", "false")))
                goto bad;

        int opt;
        optind = 2; /* after the mode */
        while ((opt = getopt(argc, argv, "b:t:n:s:w:X:A:r:d:C:")) != -1) {
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
                case 'C':
                        if (set_conf_pair(cconf, optarg)) goto bad;
                        break;
                case 'r':
                        if (parse_int(optarg, 1, MAX_RATE, &rate)) {
                                fprintf(stderr, "rdkafka-perf: -r wants 1..%d records a second\n", MAX_RATE);
                                goto bad;
                        }
                        break;
                case 'd':
                        if (parse_int(optarg, 1, MAX_SECONDS, &seconds)) {
                                fprintf(stderr, "rdkafka-perf: -d wants 1..%d seconds\n", MAX_SECONDS);
                                goto bad;
                        }
                        break;
                default: usage(); goto bad;
                }
        }
        if (measuring_latency) {
                if (optind != argc || bootstrap == NULL || topic == NULL || rate < 0 || seconds < 0 || records >= 0 || size >= 0) {
                        usage();
                        goto bad;
                }
                if (set_conf(conf, "bootstrap.servers", bootstrap) || set_conf(cconf, "bootstrap.servers", bootstrap)) goto bad;
                /* Both confs are owned by latency() from here on. */
                return latency(conf, cconf, topic, rate, seconds);
        }
        rd_kafka_conf_destroy(cconf);
        cconf = NULL;
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
        if (cconf != NULL) rd_kafka_conf_destroy(cconf);
        return 2;
}
