"""Transactions with librdkafka (Debian's python3-confluent-kafka) for e2e's
TestLibrdkafkaTransactions.

Usage: rdkafka_txn.py BOOTSTRAP INPUT OUTPUT GROUP COUNT

1. A transactional producer commits "c1" "c2" to OUTPUT, then aborts "a1".
2. Consume-transform-produce: a read_committed consumer of GROUP reads COUNT records of
   INPUT; each poll's records are written to OUTPUT as "t:" + value in a transaction
   that also commits the consumer's positions (send_offsets_to_transaction); every
   third transaction is aborted, and the consumer then rewinds to its committed
   offsets.
3. A read_committed consumer reads OUTPUT from the start to its end and prints one
   line per record: "read VALUE".
Lines "ok STEP" mark progress; any failure raises (exit status 1).
"""

import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def main():
    bootstrap, inp, out, group, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": group + "-txn", "transaction.timeout.ms": 30000})
    p.init_transactions(30)
    p.begin_transaction()
    for v in ("c1", "c2"):
        p.produce(out, v.encode(), partition=0)
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(out, b"a1", partition=0)
    p.flush(30)
    p.abort_transaction(30)
    print("ok produce", flush=True)

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.subscribe([inp])
    done, n = 0, 0
    while done < count:
        msgs = c.consume(num_messages=50, timeout=1.0)
        msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            continue
        n += 1
        p.begin_transaction()
        for m in msgs:
            p.produce(out, b"t:" + m.value(), partition=0)
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        if n % 3 == 0:
            p.abort_transaction(30)
            # Rewind to the committed offsets: the aborted records come again.
            for tp in c.committed(c.assignment(), 30):
                c.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))
            continue
        p.commit_transaction(30)
        done += len(msgs)
    c.close()
    print("ok transform %d" % n, flush=True)

    r = Consumer({"bootstrap.servers": bootstrap, "group.id": group + "-reader", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed", "enable.partition.eof": True})
    r.subscribe([out])
    while True:
        m = r.poll(10.0)
        if m is None:
            raise RuntimeError("no end of partition within 10 s")
        if m.error() is not None:
            if m.error().code() == -191:  # _PARTITION_EOF
                break
            raise KafkaException(m.error())
        print("read %s" % m.value().decode(), flush=True)
    r.close()
    print("ok read", flush=True)


if __name__ == "__main__":
    main()
