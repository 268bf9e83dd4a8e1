package appliance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"

	"skiff/internal/fileutil"
)

// nodeFileVersion is the format version of node.json; it must not change meaning.
const nodeFileVersion = 1

// nodeFile is <data>/node.json: the identity of this node, written once when the node
// first joins a cluster and replaced atomically (docs/format/node-json.md).
type nodeFile struct {
	Version   int    `json:"version"`
	NodeID    int32  `json:"node_id"`
	ClusterID string `json:"cluster_id"`
	// MemberName is the embedded etcd member's name.
	MemberName string `json:"member_name"`
	// DataDirID is a random id of this data directory (cluster.Broker.DataDirID).
	DataDirID string `json:"data_dir_id"`
}

func nodeFilePath(fs vfs.FS, dataDir string) string { return fs.PathJoin(dataDir, "node.json") }

// readNodeFile returns the stored identity, or ok=false for a data dir without one.
// fs is the data directory's filesystem (vfs.Default; crash tests use another).
func readNodeFile(fs vfs.FS, dataDir string) (nodeFile, bool, error) {
	var nf nodeFile
	path := nodeFilePath(fs, dataDir)
	b, err := fileutil.ReadFile(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return nf, false, nil
	}
	if err != nil {
		return nf, false, err
	}
	if err := json.Unmarshal(b, &nf); err != nil {
		return nf, false, fmt.Errorf("%s is damaged: %w", path, err)
	}
	if nf.Version != nodeFileVersion {
		return nf, false, fmt.Errorf("%s has format version %d; this skiff reads version %d", path, nf.Version, nodeFileVersion)
	}
	if nf.NodeID <= 0 || nf.ClusterID == "" {
		return nf, false, fmt.Errorf("%s is incomplete (node_id %d, cluster_id %q)", path, nf.NodeID, nf.ClusterID)
	}
	return nf, true, nil
}

// writeNodeFile replaces node.json atomically (fileutil.ReplaceFile): a crash
// leaves the old file or the new one, never a part.
func writeNodeFile(fs vfs.FS, dataDir string, nf nodeFile) error {
	nf.Version = nodeFileVersion
	b, err := json.MarshalIndent(nf, "", "  ")
	if err != nil {
		return err
	}
	return fileutil.ReplaceFile(fs, nodeFilePath(fs, dataDir), append(b, '\n'))
}
