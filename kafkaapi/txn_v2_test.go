package kafkaapi_test

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"skiff/appliance"
)

// TestTxnV2Node: a node with transaction version 2 switched on
// (kafkaapi.Config.TxnV2) advertises what every node does but for the raised
// maxima of transaction version 2 (TestTxnV2Conformance), and serves
// WriteTxnMarkers v2: conformance at v0..v2 (a v2 marker of transaction
// version 0 keeps the old rules), and a TV2 marker at the transaction's epoch
// plus one closes it (KIP-1228) while a repeat of it, with nothing open, is
// appended again as Kafka does. The stale-marker rule itself needs a batch at
// the bumped epoch, which only the TV2 coordinator (WP1, WP3) lets a producer
// write: 27_write_txn_markers_internal_test.go tests it on a partition.
func TestTxnV2Node(t *testing.T) {
	n, err := startNode(t.TempDir(), func(c *appliance.Config) { c.Txn.Version = 2 })
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	c := dial(t, n.KafkaAddr())
	shared := dial(t, sharedNode(t).KafkaAddr())
	if got, want := advertisedProfile(t, c), raisedForTxnV2(advertisedProfile(t, shared)); !sameKeys(got, want) {
		t.Fatalf("advertised with TxnV2 %+v, want %+v", got, want)
	}
	t.Run("WriteTxnMarkers", func(t *testing.T) { conformWriteTxnMarkers(t, c, []int16{0, 1, 2}) })

	f := newTxnFixture(t, c)
	wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	f.produce(t, c, 0, "tv2")
	marker := func(epoch int16) int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.SetVersion(2)
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = f.pid, epoch, true, 1, 2
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: f.topic, Partitions: []int32{0}}}
		req.Markers = append(req.Markers, m)
		return c.do(req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "TV2 marker at epoch+1", marker(f.epoch+1), 0)
	if lso := listOffset(t, c, f.topic, 1); lso != 2 {
		t.Fatalf("LSO %d after the TV2 commit marker, want 2", lso)
	}
	wantCode(t, "TV2 marker repeated with nothing open", marker(f.epoch+1), 0)
	if end := listOffset(t, c, f.topic, 0); end != 3 {
		t.Fatalf("log end %d after the repeat, want 3 (appended again)", end)
	}
	wantCode(t, "TV2 marker below the producer's epoch", marker(f.epoch), kerr.InvalidProducerEpoch.Code)
}

// TestWriteTxnMarkersV2AtTxnVersion1: a node at transaction version 1 (the
// shared node) serves WriteTxnMarkers v2, which a coordinator at 2 sends to
// end a TV2 transaction whose leader went back to 1 (a rolling change of
// transaction-version): the marker at the transaction's epoch plus one is
// written and the last stable offset moves past the transaction. ApiVersions
// there still advertises 0..1.
func TestWriteTxnMarkersV2AtTxnVersion1(t *testing.T) {
	c := dial(t, sharedNode(t).KafkaAddr())
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	for _, k := range c.do(req).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 27 && (k.MinVersion != 0 || k.MaxVersion != 1) {
			t.Fatalf("WriteTxnMarkers advertised %d..%d at transaction version 1, want 0..1", k.MinVersion, k.MaxVersion)
		}
	}

	f := newTxnFixture(t, c)
	wantCode(t, "add partition", f.addPartition(t, c, 0, f.epoch, f.topic).Topics[0].Partitions[0].ErrorCode, 0)
	f.produce(t, c, 0, "tv2")
	if lso := listOffset(t, c, f.topic, 1); lso != 0 {
		t.Fatalf("LSO %d with the transaction open, want 0", lso)
	}
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = f.pid, f.epoch+1, true, 1, 2
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: f.topic, Partitions: []int32{0}}}
	mr := kmsg.NewPtrWriteTxnMarkersRequest()
	mr.SetVersion(2)
	mr.Markers = append(mr.Markers, m)
	corr := c.send(mr)
	frame, err := c.readFrame(ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if len(frame) == 6 && int16(binary.BigEndian.Uint16(frame[4:])) == kerr.UnsupportedVersion.Code {
		t.Fatal("WriteTxnMarkers v2 refused at transaction version 1: UNSUPPORTED_VERSION")
	}
	resp, err := parseResponse(mr.Key(), 2, corr, frame)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "TV2 marker", resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode, 0)
	if lso := listOffset(t, c, f.topic, 1); lso != 2 {
		t.Fatalf("LSO %d after the TV2 commit marker, want 2", lso)
	}
}
