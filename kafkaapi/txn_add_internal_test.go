package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAddCode: the coordinator's answers to an implicit add become codes a
// transaction version 2 producer recovers from, except the real fences.
func TestAddCode(t *testing.T) {
	for _, tc := range []struct {
		from *kerr.Error
		want int16
	}{
		{kerr.NotCoordinator, kerr.NotEnoughReplicas.Code},
		{kerr.CoordinatorLoadInProgress, kerr.NotEnoughReplicas.Code},
		{kerr.CoordinatorNotAvailable, kerr.NotEnoughReplicas.Code},
		{kerr.OperationNotAttempted, kerr.NotEnoughReplicas.Code},
		{kerr.RequestTimedOut, kerr.NotEnoughReplicas.Code},
		{kerr.UnknownServerError, kerr.NotEnoughReplicas.Code},
		{kerr.ConcurrentTransactions, kerr.ConcurrentTransactions.Code},
		{kerr.InvalidTxnState, kerr.TransactionAbortable.Code},
		{kerr.TransactionAbortable, kerr.TransactionAbortable.Code},
		{kerr.ClusterAuthorizationFailed, kerr.TransactionAbortable.Code},
		{kerr.ProducerFenced, kerr.InvalidProducerEpoch.Code},
		{kerr.InvalidProducerEpoch, kerr.InvalidProducerEpoch.Code},
		{kerr.InvalidProducerIDMapping, kerr.InvalidProducerIDMapping.Code},
		{kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition.Code},
	} {
		if got := addCode(tc.from.Code); got != tc.want {
			t.Errorf("%s: answered %s, want %s", tc.from.Message, kerr.ErrorForCode(got), kerr.ErrorForCode(tc.want))
		}
	}
	if got := addCode(0); got != 0 {
		t.Errorf("0 answered %d", got)
	}
}

// TestTxnV2VersionsGated: Produce v12 and AddPartitionsToTxn v5 are served
// only with Config.TxnV2, and never advertised: ApiVersions keeps 11 and 4.
func TestTxnV2VersionsGated(t *testing.T) {
	for req, v := range map[kmsg.Request]int16{kmsg.NewPtrProduceRequest(): 12, kmsg.NewPtrAddPartitionsToTxnRequest(): 5} {
		req.SetVersion(v)
		frame := encodeFrame(req, 1)
		if d, err := decodeFrame(frame, 0); err != nil || d.req != nil {
			t.Fatalf("%s v%d without TxnV2: decoded %v, %v; want unsupported", kmsg.NameForKey(req.Key()), req.GetVersion(), d.req, err)
		}
		if d, err := decodeFrameWith(frame, 0, true); err != nil || d.req == nil {
			t.Fatalf("%s v%d with TxnV2: %v, %v", kmsg.NameForKey(req.Key()), req.GetVersion(), d.req, err)
		}
	}
	for _, k := range APIVersions() {
		if (k.ApiKey == 0 && k.MaxVersion != 11) || (k.ApiKey == 24 && k.MaxVersion != 4) {
			t.Fatalf("key %d advertised up to %d: TV2's versions before the feature is finalized", k.ApiKey, k.MaxVersion)
		}
	}
}
