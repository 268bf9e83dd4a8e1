package kafkaapi

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/internal/batch"
	"skiff/internal/batchtest"
	"skiff/offsets"
	"skiff/replication"
)

// writeTxnMarkersV2 is a WriteTxnMarkers request at v2 for producer 7's marker
// on t-0.
func writeTxnMarkersV2(epoch int16, transactionVersion int8) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(2)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 7, epoch, true, 1
	m.TransactionVersion = transactionVersion
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}
	req.Markers = append(req.Markers, m)
	return req
}

// TestWriteTxnMarkersV2Unadvertised: v2 is decoded with or without
// Config.TxnV2 (a coordinator at transaction version 2 may still send it to a
// node gone back to 1), and ApiVersions keeps 0..1 without it.
func TestWriteTxnMarkersV2Unadvertised(t *testing.T) {
	frame := encodeFrame(writeTxnMarkersV2(1, 2), 1)
	for _, txnV2 := range []bool{false, true} {
		d, err := decodeFrameWith(frame, 0, txnV2)
		if err != nil || d.req == nil {
			t.Fatalf("v2, TxnV2 %v: decoded %v, %v; want served", txnV2, d.req, err)
		}
		if got := d.req.(*kmsg.WriteTxnMarkersRequest).Markers[0].TransactionVersion; got != 2 {
			t.Fatalf("TxnV2 %v: transaction_version decoded as %d", txnV2, got)
		}
	}
	for _, k := range APIVersions() {
		if k.ApiKey == 27 && (k.MinVersion != 0 || k.MaxVersion != 1) {
			t.Fatalf("WriteTxnMarkers advertised %d..%d, want 0..1 until TV2 is finalized", k.MinVersion, k.MaxVersion)
		}
	}
}

// TestWriteTxnMarkersV2Stale: a v2 marker of transaction version 2 at the
// epoch of the producer's open transaction is stale (a re-sent marker of the
// transaction before): answered 0, nothing appended; the same marker at
// transaction version 1 keeps v1's rule and closes the transaction.
func TestWriteTxnMarkersV2Stale(t *testing.T) {
	dir := t.TempDir()
	db, err := offsets.Open(filepath.Join(dir, "meta"), offsets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m, err := replication.NewManager(replication.Config{
		Dir:   filepath.Join(dir, "topics"),
		Store: func(key string) replication.Store { return db.LogIndex(key) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	spec := replication.TopicSpec{Name: "t", ID: [16]byte{1}, Config: replication.PartitionConfig{MaxMessageBytes: 1 << 20},
		Partitions: []replication.PartitionSpec{{ID: 0, Leader: 0, Replicas: []int32{0}, ISR: []int32{0}}}}
	if err := m.Apply(1, []replication.TopicSpec{spec}); err != nil {
		t.Fatal(err)
	}
	p := m.Partition("t", 0)
	produce := func(epoch int16, value string) {
		t.Helper()
		b := batchtest.Strings(batchtest.Producer{ID: 7, Epoch: epoch, Sequence: 0}, time.Now().UnixMilli(), value)
		b[22] |= batch.AttrTransactional
		binary.BigEndian.PutUint32(b[17:], batch.CRC(b))
		if _, err := p.Append(b, 1); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := &Server{parts: m, cfg: Config{NodeID: 0}} // TxnV2 unset: markers follow their own transaction version
	c := &conn{srv: s, ctx: ctx}
	marker := func(req *kmsg.WriteTxnMarkersRequest) int16 {
		t.Helper()
		resp := s.handleWriteTxnMarkers(c, nil, req).(*kmsg.WriteTxnMarkersResponse)
		return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	openEpochs := func() (out []int16) {
		for _, o := range p.OpenTxns() {
			out = append(out, o.Epoch)
		}
		return out
	}

	produce(0, "a") // 0
	wantMarkerCode(t, "marker at epoch+1", marker(writeTxnMarkersV2(1, 2)), 0)
	produce(1, "b") // 2: the next transaction
	end := p.LogEndOffset()
	wantMarkerCode(t, "stale marker", marker(writeTxnMarkersV2(1, 2)), 0)
	if p.LogEndOffset() != end || len(openEpochs()) != 1 || openEpochs()[0] != 1 {
		t.Fatalf("after a stale marker: log end %d (was %d), open epochs %v; want nothing appended, epoch 1 open", p.LogEndOffset(), end, openEpochs())
	}
	wantMarkerCode(t, "marker below the producer's epoch", marker(writeTxnMarkersV2(0, 2)), kerr.InvalidProducerEpoch.Code)
	old := writeTxnMarkersV2(1, 2)
	old.SetVersion(1) // v1 has no transaction_version: TV1's rule
	wantMarkerCode(t, "v1 marker", marker(old), 0)
	if p.LogEndOffset() != end+1 || len(openEpochs()) != 0 {
		t.Fatalf("after a v1 marker: log end %d (was %d), open epochs %v; want it appended, nothing open", p.LogEndOffset(), end, openEpochs())
	}
	produce(2, "c")
	end = p.LogEndOffset()
	wantMarkerCode(t, "v2 marker of transaction version 1", marker(writeTxnMarkersV2(2, 1)), 0)
	if p.LogEndOffset() != end+1 || len(openEpochs()) != 0 {
		t.Fatalf("after a TV1 marker at v2: log end %d (was %d), open epochs %v; want it appended, nothing open", p.LogEndOffset(), end, openEpochs())
	}
}

func wantMarkerCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
	}
}
