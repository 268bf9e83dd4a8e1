package cluster

import (
	"context"
	"crypto/rand"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyConsole holds the secret with which the nodes' web consoles authenticate the
// requests they send each other (docs/format/etcd-keys.md). Must not change.
const keyConsole = Prefix + "console-key"

// ConsoleKeySize is the length of the console key in bytes.
const ConsoleKeySize = 32

type consoleKeyValue struct {
	Version int    `json:"version"`
	Key     []byte `json:"key"` // base64 in JSON
}

// ConsoleKey returns the cluster's console key, creating it with random bytes if
// it does not exist yet (the first node's create wins; every other node reads
// that key). It never changes afterwards.
func (s *Store) ConsoleKey(ctx context.Context) ([]byte, error) {
	key := make([]byte, ConsoleKeySize)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(keyConsole), "=", 0)).
		Then(clientv3.OpPut(keyConsole, encode(consoleKeyValue{Version: valueVersion, Key: key}))).
		Else(clientv3.OpGet(keyConsole)).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("cluster: ensure %s: %w", keyConsole, err)
	}
	if resp.Succeeded {
		return key, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return nil, fmt.Errorf("cluster: %s vanished", keyConsole) // the txn is atomic: cannot happen
	}
	var v consoleKeyValue
	if err := decode(keyConsole, kvs[0].Value, &v, func() int { return v.Version }); err != nil {
		return nil, err
	}
	if len(v.Key) != ConsoleKeySize {
		return nil, fmt.Errorf("%w: %s holds a key of %d bytes, want %d", ErrCorrupt, keyConsole, len(v.Key), ConsoleKeySize)
	}
	return v.Key, nil
}
