package replication

import (
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/fileutil"
	"skiff/offsets"
)

// TestNewPartitionDurable: a partition Apply creates survives a crash right
// after it (a MemFS that keeps only what was fsynced): its folder, its
// partition.metadata, whose name only the fsync of the folder by the log's
// first segment makes durable, and that segment.
func TestNewPartitionDurable(t *testing.T) {
	db, err := offsets.Open(filepath.Join(t.TempDir(), "meta"), offsets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fs := vfs.NewCrashableMem()
	if err := fileutil.MkdirAll(fs, "/data/topics", 0o755); err != nil { // durably
		t.Fatal(err)
	}
	m, err := NewManager(Config{FS: fs, Dir: "/data/topics", Store: func(key string) Store { return db.LogIndex(key) }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sp := spec("durable", 7, 3)
	if err := m.Apply(1, []TopicSpec{sp}); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{}) // only what was synced
	for p := range int32(3) {
		dir := fs.PathJoin("/data/topics", PartitionKey(sp.Name, p))
		b, err := fileutil.ReadFile(crashed, fs.PathJoin(dir, metadataFile))
		if err != nil {
			t.Fatalf("partition %d after a crash: %v", p, err)
		}
		if want := "topic_id: " + hex.EncodeToString(sp.ID[:]); strings.TrimSpace(string(b)) != want {
			t.Fatalf("partition %d after a crash: %s is %q, want %q", p, metadataFile, b, want)
		}
		names, err := crashed.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		segments := 0
		for _, n := range names {
			if strings.HasSuffix(n, ".log") {
				segments++
			}
		}
		if segments != 1 {
			t.Fatalf("partition %d after a crash holds %v, want one segment", p, names)
		}
	}
}
