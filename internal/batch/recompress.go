package batch

import (
	"encoding/binary"

	"skiff/internal/compress"
)

// Recompress returns a new batch holding the records of b, one whole batch that
// passed Check, compressed with codec c: the header is b's (offsets, timestamps,
// producer id, epoch and sequence, the other attributes) with the codec bits,
// batchLength and CRC rewritten. Snappy is written in the xerial framing, as
// Kafka's broker writes it (every client reads it). The records of b may
// decompress to limit bytes at most (compress.ErrTooLarge); input that does not
// decompress is an error wrapping compress.ErrCorrupt. When b already uses c, b
// itself is returned.
func Recompress(b []byte, c compress.Codec, level, limit int) ([]byte, error) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:])
	from := compress.Codec(attrs & AttrCompressionMask)
	if from == c {
		return b, nil
	}
	raw, err := compress.Decompress(from, nil, b[HeaderSize:], limit)
	if err != nil {
		return nil, err
	}
	format := compress.Plain
	if c == compress.Snappy {
		format = compress.Xerial
	}
	out := make([]byte, HeaderSize, HeaderSize+len(raw)/2)
	copy(out, b[:HeaderSize])
	if out, err = compress.CompressLevel(c, format, level, out, raw); err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-LogOverhead))
	binary.BigEndian.PutUint16(out[offAttributes:], attrs&^AttrCompressionMask|uint16(c))
	binary.BigEndian.PutUint32(out[offCRC:], CRC(out))
	return out, nil
}
