package groups

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnOffsetCommitVerifier: a TxnOffsetCommit appends only once the verifier
// confirms that the group's partition is in the transaction; a refusal is
// INVALID_TXN_STATE before v4 and TRANSACTION_ABORTABLE from v4, and other codes
// (a coordinator moving) are answered as given, with nothing appended.
func TestTxnOffsetCommitVerifier(t *testing.T) {
	e := newEnv(t)
	var asked []int32
	answer := int16(0)
	verify := func(_ context.Context, partition int32) int16 {
		asked = append(asked, partition)
		return answer
	}
	commit := func(version int16) int16 {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.SetVersion(version)
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = "tx", "g", 7, 0, -1
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = 6
		r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{rp}}}
		return e.c.TxnOffsetCommit(context.Background(), r, verify).Topics[0].Partitions[0].ErrorCode
	}
	end := e.log.LogEndOffset()
	for _, c := range []struct {
		answer, version int16
		want            *kerr.Error
	}{
		{kerr.InvalidTxnState.Code, 3, kerr.InvalidTxnState},
		{kerr.InvalidTxnState.Code, 4, kerr.TransactionAbortable},
		{kerr.CoordinatorNotAvailable.Code, 4, kerr.CoordinatorNotAvailable},
		{kerr.InvalidProducerEpoch.Code, 3, kerr.InvalidProducerEpoch},
	} {
		answer = c.answer
		wantCode(t, kerr.ErrorForCode(c.answer).Error(), commit(c.version), c.want)
	}
	if got := e.log.LogEndOffset(); got != end {
		t.Fatalf("log end %d after refused commits, want %d", got, end)
	}
	answer = 0
	wantCode(t, "verified", commit(4), nil)
	if got := e.log.LogEndOffset(); got <= end {
		t.Fatalf("log end %d after a verified commit, want past %d", got, end)
	}
	for _, p := range asked {
		if p != 0 {
			t.Fatalf("verified partition %d, want the group's, 0", p)
		}
	}
	if len(asked) != 5 {
		t.Fatalf("verifier asked %d times, want 5", len(asked))
	}
}
