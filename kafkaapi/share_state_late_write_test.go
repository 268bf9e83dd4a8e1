package kafkaapi_test

// A late write of a share-partition's state (an older (leader_epoch, seq) that
// lands after a newer one, as a produce retried by the client, or a deposed
// leader's, can) is ignored by readers, and the node writes the newest state
// again so that it, not the late one, is the last record of the key: the one
// compaction keeps, and the one a node whose tail starts after compaction reads.

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/sharegroup"
)

// shareStateKey and shareStateValue encode a state record as
// docs/format/share-state.md lays it out (no runs).
func shareStateKey(k sharegroup.Key) []byte {
	b := []byte{1}
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

func shareStateValue(epoch int32, seq, start int64) []byte {
	b := make([]byte, 5)
	b[0] = 1
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, 0)
	binary.BigEndian.PutUint32(b[1:], crc32.Checksum(b[5:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// lastShareSeq reads partition p of the state topic to its end and returns the
// seq of the last record with key (-1: none).
func lastShareSeq(t *testing.T, addr string, p int32, key []byte) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx, sharegroup.StateTopic)
	if err != nil {
		t.Fatal(err)
	}
	end, ok := ends.Lookup(sharegroup.StateTopic, p)
	if !ok || end.Err != nil {
		t.Fatalf("end offset of %s-%d: %v", sharegroup.StateTopic, p, end.Err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		sharegroup.StateTopic: {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seq, next := int64(-1), int64(0)
	for next < end.Offset {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("read %s-%d: %v", sharegroup.StateTopic, p, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if string(r.Key) == string(key) && len(r.Value) >= 17 {
				seq = int64(binary.BigEndian.Uint64(r.Value[9:]))
			}
		})
	}
	return seq
}

func TestShareStateLateWriteIsRewritten(t *testing.T) {
	n := sharedNode(t)
	c := dial(t, n.KafkaAddr())
	topic, group := shareOffsetsFixture(t, c)
	// The group's first state: the state topic exists from now on.
	wantCode(t, "alter", alterShareOffset(c, 0, group, topic, 2).Topics[0].Partitions[0].ErrorCode, 0)
	key := sharegroup.Key{Group: group, TopicID: topicIDOf(t, c, topic), Partition: 0}

	w, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.ClientID(sharegroup.StoreClientID),
		kgo.DisableIdempotentWrite(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(w).ListTopics(ctx, sharegroup.StateTopic)
	if err != nil || len(td[sharegroup.StateTopic].Partitions) == 0 {
		t.Fatalf("state topic: %v %+v", err, td)
	}
	p := sharegroup.StatePartition(key, int32(len(td[sharegroup.StateTopic].Partitions)))
	const epoch = 1 << 20 // above the node's own writes' leader epoch
	// A newer state, then a late older one.
	for _, v := range [][]byte{shareStateValue(epoch, 2, 7), shareStateValue(epoch, 1, 4)} {
		r := &kgo.Record{Topic: sharegroup.StateTopic, Partition: p, Key: shareStateKey(key), Value: v}
		if err := w.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the newest state to be the key's last record again", func() bool {
		return lastShareSeq(t, n.KafkaAddr(), p, shareStateKey(key)) == 2
	})
	if st := describeShareOffset(t, c, 0, group, topic); st.StartOffset != 7 {
		t.Errorf("start offset %d, want 7 (the newest state's)", st.StartOffset)
	}
}
