package replication

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
)

// FuzzDecodeEpochs checks the leader-epoch checkpoint codec
// (docs/format/leader-epochs.md). Invariants:
//   - decodeEpochs never panics, and fails only with errEpochsCorrupt;
//   - what it accepts has strictly increasing epochs and non-decreasing start
//     offsets, and encodeEpochs turns it back into exactly the input bytes (one
//     encoding per entry list, so nothing is lost or made up);
//   - read as a list of 12-byte entries and cut to the prefix that is in order,
//     the same input encodes to a checkpoint that decodes to that list:
//     decode(encode(x)) == x. (Random bytes rarely carry a right CRC, so this
//     is what exercises decoding of accepted checkpoints beyond the seeds.)
//
// Seeds are checkpoints encodeEpochs wrote (empty, one entry, several, extreme
// values), each also truncated and with one bit flipped.
func FuzzDecodeEpochs(f *testing.F) {
	for _, es := range [][]epochEntry{
		nil,
		{{0, 0}},
		{{0, 0}, {2, 100}, {5, 250}},
		{{-7, -5}, {3, -5}, {4, 0}},
		{{0, 0}, {math.MaxInt32, math.MaxInt64}},
	} {
		b := encodeEpochs(es)
		f.Add(b)
		f.Add(b[:len(b)-1])
		flipped := bytes.Clone(b)
		flipped[len(b)/2] ^= 0x40
		f.Add(flipped)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := decodeEpochs(b)
		if err != nil {
			if !errors.Is(err, errEpochsCorrupt) {
				t.Fatalf("decode failed with %v, not errEpochsCorrupt", err)
			}
		} else {
			checkEpochOrder(t, es)
			if got := encodeEpochs(es); !bytes.Equal(got, b) {
				t.Fatalf("decoded %v, which encodes to %x, not the input %x", es, got, b)
			}
		}

		var want []epochEntry
		for p := b; len(p) >= epochEntryLen; p = p[epochEntryLen:] {
			e := epochEntry{epoch: int32(binary.BigEndian.Uint32(p)), startOffset: int64(binary.BigEndian.Uint64(p[4:]))}
			if n := len(want); n > 0 && (e.epoch <= want[n-1].epoch || e.startOffset < want[n-1].startOffset) {
				break
			}
			want = append(want, e)
		}
		got, err := decodeEpochs(encodeEpochs(want))
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("decode(encode(%v)) = %v, %v", want, got, err)
		}
	})
}

func checkEpochOrder(t *testing.T, es []epochEntry) {
	t.Helper()
	for i := 1; i < len(es); i++ {
		if es[i].epoch <= es[i-1].epoch || es[i].startOffset < es[i-1].startOffset {
			t.Fatalf("decoded entries out of order: %v", es)
		}
	}
}
