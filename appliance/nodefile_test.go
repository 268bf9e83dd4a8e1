package appliance

import (
	"testing"

	"skiff/internal/crashfs"
)

// TestNodeFileCrash: a power failure at any write or sync while node.json is
// written leaves no file (the node starts as new) or the whole file, never a part
// of it and never an error at the next start; once writeNodeFile returned, the file
// survives every crash image.
func TestNodeFileCrash(t *testing.T) {
	want := nodeFile{NodeID: 3, ClusterID: "cDfYfBU7R4eyw0rzl1M-Ig", MemberName: "host-a", DataDirID: "tY2C0m3xQhWb1x0yq9wJbA"}
	newFS := func(seed uint64) *crashfs.FS {
		fs, err := crashfs.NewWithDir(seed, "/data")
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
	// The mutating operations of one write.
	probe := newFS(0)
	before := probe.Ops()
	if err := writeNodeFile(probe, "/data", want); err != nil {
		t.Fatal(err)
	}
	ops := probe.Ops() - before
	seen := map[bool]int{}
	for k := 1; k <= ops; k++ {
		for seed := range uint64(10) {
			fs := newFS(seed)
			fs.CrashAt(k, nil)
			if err := writeNodeFile(fs, "/data", want); err != nil {
				t.Fatal(err)
			}
			got, ok, err := readNodeFile(fs.Restart(), "/data")
			if err != nil {
				t.Fatalf("crash at operation %d (seed %d): the next start fails: %v", k, seed, err)
			}
			if ok && got != (nodeFile{Version: nodeFileVersion, NodeID: 3, ClusterID: want.ClusterID, MemberName: want.MemberName, DataDirID: want.DataDirID}) {
				t.Fatalf("crash at operation %d: read back %+v", k, got)
			}
			seen[ok]++
		}
	}
	for seed := range uint64(20) {
		fs := newFS(seed)
		if err := writeNodeFile(fs, "/data", want); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := readNodeFile(fs.Restart(), "/data"); err != nil || !ok {
			t.Fatalf("node.json lost after writeNodeFile returned (ok %v, %v)", ok, err)
		}
	}
	t.Logf("%d operations per write; crash images without the file %d, with it %d", ops, seen[false], seen[true])
	if seen[false] == 0 || seen[true] == 0 {
		t.Fatalf("crash images: %v; want some with and some without the file", seen)
	}
}
