package console

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Limits of the message browser.
const (
	// maxPageRecords and maxPageBytes bound one page of records (the bytes as
	// stored, compressed batches counted by their compressed size).
	maxPageRecords = 500
	maxPageBytes   = 4 << 20
	// maxShown is how much of a key, value or header value a page shows.
	maxShown = 16 << 10
)

// decodeBatches returns the records of raw batches (decompressed, control records
// left out) whose offsets are in [from, to).
func decodeBatches(data []byte, from, to int64) ([]*kgo.Record, error) {
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.RecordBatches = data
	fp.HighWatermark = to
	part, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "", Partition: 0, Offset: from}, &fp, kgo.DefaultDecompressor(), nil)
	if part.Err != nil {
		return nil, part.Err
	}
	var out []*kgo.Record
	for _, r := range part.Records {
		if r.Offset >= from && r.Offset < to {
			out = append(out, r)
		}
	}
	return out, nil
}

// Formats of keys and values.
const (
	formatAuto = "auto"
	formatText = "text"
	formatJSON = "json"
	formatHex  = "hex"
)

// shown is a key, value or header value as the page prints it (escaped by the
// template, never marked safe).
type shown struct {
	Text      string
	Format    string // what it was shown as: text, json, hex, null
	Truncated int    // bytes left out
	Size      int
}

// show renders b in format f (auto: JSON if it parses, text if it is printable
// UTF-8, else hex), cut to maxShown bytes.
func show(b []byte, f string) shown {
	if b == nil {
		return shown{Format: "null"}
	}
	s := shown{Size: len(b)}
	cut := b
	if len(cut) > maxShown {
		cut, s.Truncated = cut[:maxShown], len(b)-maxShown
	}
	if f == formatAuto || f == formatJSON {
		if s.Truncated == 0 && json.Valid(b) {
			var out bytes.Buffer
			if json.Indent(&out, b, "", "  ") == nil {
				s.Text, s.Format = out.String(), formatJSON
				return s
			}
		}
		if f == formatJSON {
			f = formatAuto
		}
	}
	if (f == formatAuto || f == formatText) && printable(cut) {
		s.Text, s.Format = string(cut), formatText
		return s
	}
	s.Text, s.Format = hexDump(cut), formatHex
	return s
}

// printable: valid UTF-8 without control characters other than tab and newlines.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return false
		}
	}
	return true
}

// hexDump is 16 bytes a line: offset, hex, and the printable ASCII.
func hexDump(b []byte) string {
	var out bytes.Buffer
	for i := 0; i < len(b); i += 16 {
		line := b[i:min(i+16, len(b))]
		fmt.Fprintf(&out, "%08x  %-47s  ", i, spaced(hex.EncodeToString(line)))
		for _, c := range line {
			if c < 0x20 || c > 0x7e {
				c = '.'
			}
			out.WriteByte(c)
		}
		out.WriteByte('\n')
	}
	return out.String()
}

func spaced(h string) string {
	var out []byte
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, h[i:i+2]...)
	}
	return string(out)
}
