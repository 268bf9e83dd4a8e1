package kafkaapi

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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
