package replication

// Record errors (KIP-467, Produce v8+): a batch refused because of some of its
// records names them, by index in the batch, as Kafka's validator does.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"skiff/internal/batch"
)

// RecordError is one record that made its batch refused: its index in the batch
// and why.
type RecordError struct {
	Index   int32
	Message string
}

// RecordErrors is the error of a batch refused for some of its records. It
// unwraps to its Kafka error (INVALID_RECORD, INVALID_TIMESTAMP); Message is
// the batch's summary, as Kafka words it.
type RecordErrors struct {
	Records []RecordError
	Message string
	Err     error
}

func (e *RecordErrors) Error() string { return fmt.Sprintf("%s: %v", e.Message, e.Err) }
func (e *RecordErrors) Unwrap() error { return e.Err }

// maxRecordErrors bounds the records named in one answer: a batch of a million
// keyless records is refused in one line, not a million.
const maxRecordErrors = 1000

// recordErrors returns the records of batch b for which bad returns a reason,
// in order, at most maxRecordErrors of them, and whether the records parsed.
func recordErrors(b []byte, bad func(r batch.Record) string) ([]RecordError, error) {
	d := decoders.Get().(*batch.Decoder)
	defer decoders.Put(d)
	var out []RecordError
	i := int32(0)
	err := d.Records(b, func(r batch.Record) error {
		if why := bad(r); why != "" && len(out) < maxRecordErrors {
			out = append(out, RecordError{Index: i, Message: why})
		}
		i++
		return nil
	})
	return out, err
}

// checkKeys refuses a batch for a compacted topic unless every record has a
// key, as Kafka does (INVALID_RECORD, naming each record without one); a batch
// whose records do not parse is CORRUPT_MESSAGE.
func checkKeys(records []byte, topic string, partition int32) error {
	why := fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d", topic, partition)
	errs, err := recordErrors(records, func(r batch.Record) string {
		if r.Key == nil {
			return why
		}
		return ""
	})
	switch {
	case err != nil:
		return fmt.Errorf("%v: %w", err, kerr.CorruptMessage)
	case len(errs) > 0:
		return &RecordErrors{Records: errs, Err: kerr.InvalidRecord, Message: fmt.Sprintf(
			"One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: %v",
			len(errs), errs[:min(len(errs), 3)])}
	}
	return nil
}

// timestampErrors names the records of a batch whose header is out of bounds
// (TimestampBounds.check refused it): each record out of [lo, hi], as Kafka
// checks them. Records that do not parse leave the batch's error unnamed.
func timestampErrors(records []byte, lo, hi int64, err error) error {
	errs, perr := recordErrors(records, func(r batch.Record) string {
		if r.Timestamp != -1 && (r.Timestamp < lo || r.Timestamp > hi) { // -1: no timestamp, not checked (Kafka)
			return fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]", r.Timestamp, r.Offset, lo, hi)
		}
		return ""
	})
	if perr != nil || len(errs) == 0 {
		return err
	}
	return &RecordErrors{Records: errs, Err: err, Message: "One or more records have been rejected due to invalid timestamp"}
}
