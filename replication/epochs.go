package replication

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sort"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/fileutil"
)

// epochsFile is the leader-epoch checkpoint of a partition replica, in its folder
// (format: docs/format/leader-epochs.md).
const epochsFile = "leader-epochs"

// Format constants of the leader-epoch checkpoint; they must not change.
const (
	epochsMagic   = "SKLE"
	epochsVersion = 1
	epochEntryLen = 12 // epoch i32, start offset i64
)

var errEpochsCorrupt = errors.New("replication: leader-epoch checkpoint is damaged")

// epochEntry says that the records from startOffset on were appended by the leader of
// epoch, up to the next entry's start offset.
type epochEntry struct {
	epoch       int32
	startOffset int64
}

// epochCache is the epoch -> start offset map of one replica (Kafka's
// LeaderEpochFileCache), kept in memory and checkpointed to its file on every change,
// except a leader's new epoch (assignUnsaved), which is checkpointed before the
// first batch of that epoch is appended. Epochs and start offsets both increase
// along the slice. Guarded by the partition.
type epochCache struct {
	fs      vfs.FS
	path    string
	entries []epochEntry
	unsaved bool // entries holds an epoch the file does not
}

func loadEpochs(fs vfs.FS, dir string) (*epochCache, error) {
	c := &epochCache{fs: fs, path: fs.PathJoin(dir, epochsFile)}
	b, err := fileutil.ReadFile(fs, c.path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	if c.entries, err = decodeEpochs(b); err != nil {
		return nil, fmt.Errorf("%s: %w", c.path, err)
	}
	return c, nil
}

func encodeEpochs(es []epochEntry) []byte {
	b := append([]byte(epochsMagic), 0, epochsVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(es)))
	for _, e := range es {
		b = binary.BigEndian.AppendUint32(b, uint32(e.epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.startOffset))
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeEpochs(b []byte) ([]epochEntry, error) {
	if len(b) < 14 || string(b[:4]) != epochsMagic {
		return nil, errEpochsCorrupt
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != epochsVersion {
		return nil, fmt.Errorf("%w: version %d", errEpochsCorrupt, v)
	}
	n := int(binary.BigEndian.Uint32(b[6:]))
	if len(b) != 10+n*epochEntryLen+4 {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", errEpochsCorrupt, n, len(b))
	}
	if crc32.Checksum(b[:len(b)-4], castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: checksum", errEpochsCorrupt)
	}
	es := make([]epochEntry, n)
	for i := range es {
		p := b[10+i*epochEntryLen:]
		es[i] = epochEntry{epoch: int32(binary.BigEndian.Uint32(p)), startOffset: int64(binary.BigEndian.Uint64(p[4:]))}
		if i > 0 && (es[i].epoch <= es[i-1].epoch || es[i].startOffset < es[i-1].startOffset) {
			return nil, fmt.Errorf("%w: entries out of order", errEpochsCorrupt)
		}
	}
	return es, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (c *epochCache) save() error {
	if err := fileutil.ReplaceFile(c.fs, c.path, encodeEpochs(c.entries)); err != nil {
		return err
	}
	c.unsaved = false
	return nil
}

// assignUnsaved records that a leader's epoch starts at offset, if epoch is newer
// than the latest, in memory only: saveUnsaved checkpoints it before the first
// batch of the epoch is appended. An epoch that appended nothing changes no
// answer of endOffsetFor once a later one exists, and losing it in a crash is
// what a rebuild from the log loses too; saving it at once cost two fsyncs per
// partition each time leadership moved (10,000 partitions led anew after every
// restart).
func (c *epochCache) assignUnsaved(epoch int32, offset int64) {
	if epoch <= c.latest() {
		return
	}
	c.entries = append(c.entries, epochEntry{epoch, offset})
	c.unsaved = true
}

// saveUnsaved checkpoints an epoch assignUnsaved recorded, if any.
func (c *epochCache) saveUnsaved() error {
	if !c.unsaved {
		return nil
	}
	return c.save()
}

// latest returns the newest epoch, or -1.
func (c *epochCache) latest() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].epoch
}

// assign records that epoch starts at offset, if epoch is newer than the latest.
func (c *epochCache) assign(epoch int32, offset int64) error {
	if epoch <= c.latest() {
		return nil
	}
	c.entries = append(c.entries, epochEntry{epoch, offset})
	return c.save()
}

// truncateFrom drops the epochs that start at or after offset (the log was cut there).
func (c *epochCache) truncateFrom(offset int64) error {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].startOffset >= offset {
		n--
	}
	if n == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:n]
	return c.save()
}

// clear drops every entry (the log was reset to empty).
func (c *epochCache) clear() error {
	if len(c.entries) == 0 {
		return nil
	}
	c.entries = nil
	return c.save()
}

// endOffsetFor answers OffsetForLeaderEpoch for epoch, given the log end offset:
// the largest epoch at or below it that this replica knows, and the offset where
// that epoch ended (the start of the next epoch, or leo for the latest). An epoch
// below every known one gives (epoch, first start offset); an epoch above the latest
// gives (-1, -1), Kafka's UNDEFINED.
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	if epoch < 0 || len(c.entries) == 0 {
		return -1, -1
	}
	if epoch == c.latest() {
		return epoch, leo
	}
	// The first entry with a higher epoch.
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].epoch > epoch })
	if i == len(c.entries) {
		return -1, -1 // higher than anything known
	}
	if i == 0 {
		return epoch, c.entries[0].startOffset
	}
	return c.entries[i-1].epoch, c.entries[i].startOffset
}
