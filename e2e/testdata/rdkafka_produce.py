"""Produces records with librdkafka (Debian's python3-confluent-kafka) for the e2e fault
tests: an idempotent acks=all producer at a fixed rate, until its stdin closes.

Usage: rdkafka_produce.py BOOTSTRAP TOPIC RATE DELIVERY_TIMEOUT_MS [DEBUG]

DEBUG, when given, is librdkafka's debug setting (its log goes to stderr).
RDKAFKA_CONF in the environment ("key=value,key=value") adds librdkafka settings,
for measurements (scripts/perf/freeze10.sh); the tests do not set it.

Each record's value is "v%08d" (a counter) and its key the value's last two digits, as
the franz-go workload does. One line per outcome on stdout:
    ack PARTITION OFFSET VALUE UNIX_NANOS   (OFFSET -1: acknowledged, offset unknown)
    fail VALUE ERROR
and "done" once everything produced has an outcome.
"""

import os
import sys
import threading
import time

from confluent_kafka import KafkaException, Producer


def main():
    bootstrap, topic, rate, timeout_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    out = sys.stdout

    def delivered(err, msg):
        value = msg.value().decode()
        if err is not None:
            out.write("fail %s %s\n" % (value, str(err).replace("\n", " ")))
        else:
            # librdkafka's idempotent producer reports a batch whose request failed
            # but that a later, successful one proves persisted with no offset.
            offset = msg.offset()
            out.write("ack %d %d %s %d\n" % (msg.partition(), -1 if offset is None else offset, value, time.time_ns()))

    conf = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "message.timeout.ms": timeout_ms,
    }
    if len(sys.argv) > 5:
        conf["debug"] = sys.argv[5]
    for kv in filter(None, os.environ.get("RDKAFKA_CONF", "").split(",")):
        k, v = kv.split("=", 1)
        conf[k] = v
    p = Producer(conf)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()

    tick = 0.01  # produce rate*tick records every tick
    per_tick = max(1, int(rate * tick))
    i = 0
    next_tick = time.monotonic()
    while not stop.is_set():
        for _ in range(per_tick):
            v = "v%08d" % i
            while True:
                try:
                    p.produce(topic, key=v[-2:], value=v, on_delivery=delivered)
                    break
                except BufferError:  # the local queue is full: serve callbacks, retry
                    p.poll(0.05)
            i += 1
        next_tick = max(next_tick + tick, time.monotonic() - 1)  # never catch up more than 1 s
        while time.monotonic() < next_tick:  # poll returns early when it served a callback
            p.poll(max(0, next_tick - time.monotonic()))
        out.flush()
    left = p.flush(120)
    out.write("done %d\n" % left)
    out.flush()


if __name__ == "__main__":
    try:
        main()
    except KafkaException as e:
        print("error %s" % e, file=sys.stderr)
        sys.exit(1)
