package batch_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/internal/compress"
)

func kv(k, v string) batchtest.KV {
	if v == "<nil>" {
		return batchtest.KV{Key: []byte(k)}
	}
	return batchtest.KV{Key: []byte(k), Value: []byte(v)}
}

// TestRecordsCompressed: Records reads keys, values, offsets and timestamps of
// batches in every codec (and xerial snappy) alike.
func TestRecordsCompressed(t *testing.T) {
	for _, c := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		for _, xerial := range []bool{false, true} {
			if xerial && c != compress.Snappy {
				continue
			}
			b := batchtest.Keyed(batchtest.Plain, 1000, c, xerial, kv("a", "1"), kv("b", "<nil>"), kv("c", "3"))
			batch.SetBaseOffset(b, 40)
			h, err := batch.Check(b)
			if err != nil || h.Codec() != c || !h.Dense() {
				t.Fatalf("%s: %+v %v", c, h, err)
			}
			var got []string
			var d batch.Decoder
			if err := d.Records(b, func(r batch.Record) error {
				got = append(got, fmt.Sprintf("%d@%d %s=%v", r.Offset, r.Timestamp, r.Key, r.Value))
				return nil
			}); err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			want := []string{"40@1000 a=[49]", "41@1001 b=[]", "42@1002 c=[51]"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: records %q, want %q", c, got, want)
			}
		}
	}
}

// TestRebuild: a batch written again with some of its records keeps its base
// offset, lastOffsetDelta, producer fields and codec (and snappy framing), passes
// Check with a fresh CRC, and franz-go's decoder and Records read exactly the
// kept records with their offsets and timestamps; with a delete horizon the
// baseTimestamp is the horizon and record timestamps are unchanged.
func TestRebuild(t *testing.T) {
	p := batchtest.Producer{ID: 9, Epoch: 2, Sequence: 100}
	for _, c := range []compress.Codec{compress.None, compress.Gzip, compress.Snappy, compress.LZ4, compress.Zstd} {
		for _, xerial := range []bool{false, true} {
			if xerial && c != compress.Snappy {
				continue
			}
			for _, horizon := range []int64{batch.NoHorizon, 5000} {
				name := fmt.Sprintf("%s-xerial=%v-horizon=%d", c, xerial, horizon)
				b := batchtest.Keyed(p, 1000, c, xerial, kv("a", "1"), kv("b", "2"), kv("c", "<nil>"), kv("d", "4"))
				batch.SetBaseOffset(b, 70)
				batch.SetLeaderEpoch(b, 3)
				h, _ := batch.Check(b)
				var kept []batch.Record
				var d batch.Decoder
				if err := d.Records(b, func(r batch.Record) error {
					if r.Offset == 71 || r.Offset == 72 {
						kept = append(kept, r)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				var rb batch.Rebuilder
				out, err := rb.Rebuild([]byte("x"), &h, kept, horizon, compress.FormatOf(c, b[batch.HeaderSize:]))
				if err != nil {
					t.Fatal(err)
				}
				if string(out[:1]) != "x" {
					t.Fatal("Rebuild dropped what dst held")
				}
				nb := out[1:]
				nh, err := batch.Check(nb)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if nh.BaseOffset != 70 || nh.LastOffsetDelta != 3 || nh.RecordCount != 2 || nh.LeaderEpoch != 3 ||
					nh.ProducerID != 9 || nh.ProducerEpoch != 2 || nh.BaseSequence != 100 || nh.Codec() != c || nh.Dense() ||
					nh.MaxTimestamp != 1002 || nh.LastSequence() != 103 {
					t.Fatalf("%s: header %+v", name, nh)
				}
				if compress.FormatOf(c, nb[batch.HeaderSize:]) != compress.FormatOf(c, b[batch.HeaderSize:]) {
					t.Fatalf("%s: snappy framing changed", name)
				}
				if hz, ok := nh.DeleteHorizon(); ok != (horizon != batch.NoHorizon) || ok && hz != horizon {
					t.Fatalf("%s: horizon %d %v", name, hz, ok)
				}
				var got []string
				if err := batch.Records(nb, func(r batch.Record) error {
					got = append(got, fmt.Sprintf("%d@%d %s=%v", r.Offset, r.Timestamp, r.Key, r.Value))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if want := "[71@1001 b=[50] 72@1002 c=[]]"; fmt.Sprint(got) != want {
					t.Fatalf("%s: records %v, want %s", name, got, want)
				}
				// A client reads the same records at the same offsets.
				var krb kmsg.RecordBatch
				if err := krb.ReadFrom(nb); err != nil {
					t.Fatal(err)
				}
				fp := kgo.ProcessFetchPartitionOpts{Topic: "t", Partition: 0, KeepControlRecords: true}
				fetched, _ := kgo.ProcessFetchPartition(fp, &kmsg.FetchResponseTopicPartition{RecordBatches: nb}, kgo.DefaultDecompressor(), nil)
				if len(fetched.Records) != 2 || fetched.Records[0].Offset != 71 || fetched.Records[1].Offset != 72 ||
					!bytes.Equal(fetched.Records[0].Value, []byte("2")) || fetched.Records[1].Value != nil ||
					fetched.Records[0].Timestamp.UnixMilli() != 1001 {
					t.Fatalf("%s: franz-go reads %+v (err %v)", name, fetched.Records, fetched.Err)
				}
			}
		}
	}
}

// TestAppendEmpty: the header-only batch keeps the offsets and producer fields,
// passes Check, and holds no records.
func TestAppendEmpty(t *testing.T) {
	b := batchtest.Keyed(batchtest.Producer{ID: 4, Epoch: 1, Sequence: 10}, 700, compress.Zstd, false, kv("a", "1"), kv("b", "2"))
	batch.SetBaseOffset(b, 12)
	h, _ := batch.Check(b)
	e := batch.AppendEmpty(nil, &h)
	eh, err := batch.Check(e)
	if err != nil {
		t.Fatal(err)
	}
	if eh.BaseOffset != 12 || eh.NextOffset() != 14 || eh.RecordCount != 0 || eh.ProducerID != 4 || eh.LastSequence() != 11 ||
		eh.Codec() != compress.None || eh.MaxTimestamp != 701 || len(e) != batch.HeaderSize {
		t.Fatalf("empty batch %+v", eh)
	}
	if err := batch.Records(e, func(batch.Record) error { t.Fatal("a record in an empty batch"); return nil }); err != nil {
		t.Fatal(err)
	}
}
