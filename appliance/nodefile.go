package appliance

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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

func nodeFilePath(dataDir string) string { return filepath.Join(dataDir, "node.json") }

// readNodeFile returns the stored identity, or ok=false for a data dir without one.
func readNodeFile(dataDir string) (nodeFile, bool, error) {
	var nf nodeFile
	b, err := os.ReadFile(nodeFilePath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return nf, false, nil
	}
	if err != nil {
		return nf, false, err
	}
	if err := json.Unmarshal(b, &nf); err != nil {
		return nf, false, fmt.Errorf("%s is damaged: %w", nodeFilePath(dataDir), err)
	}
	if nf.Version != nodeFileVersion {
		return nf, false, fmt.Errorf("%s has format version %d; this skiff reads version %d", nodeFilePath(dataDir), nf.Version, nodeFileVersion)
	}
	if nf.NodeID <= 0 || nf.ClusterID == "" {
		return nf, false, fmt.Errorf("%s is incomplete (node_id %d, cluster_id %q)", nodeFilePath(dataDir), nf.NodeID, nf.ClusterID)
	}
	return nf, true, nil
}

func writeNodeFile(dataDir string, nf nodeFile) error {
	nf.Version = nodeFileVersion
	b, err := json.MarshalIndent(nf, "", "  ")
	if err != nil {
		return err
	}
	return fileutil.WriteFileAtomic(nodeFilePath(dataDir), append(b, '\n'), 0o640)
}
