package console

// The console's internal API: what a node's pages ask the other nodes for. JSON,
// on the same HTTP port as the pages:
//
//	GET /v1/console/node?node=1&topic=T&group=G&parts=T&all_parts=1
//	    Local, with the node's rate history (node: its bytes in and out; topic,
//	    group: those series) and its replicas of the topics parts (all_parts: all)
//	GET /v1/console/group?name=G                 GroupMembers of a group coordinated here
//	GET /v1/console/records?topic=T&partition=P&offset=O&max_bytes=N
//	                                             Batches of a local replica
//	GET /v1/console/offset?topic=T&partition=P&timestamp=MS
//	                                             {"offset": N}: the first offset at or after MS
//	POST /v1/console/group/commit {"group": G, "offsets": [...]}
//	                                             commits offsets of a group without members
//	POST /v1/console/group/delete {"group": G}   deletes a group without members
//
// The writes are what a console page asks of a group's coordinator once its own
// admin session and CSRF token were checked. Every request must carry the
// cluster's console key (header X-Skiff-Console-Key, the value of
// /skiff/console-key): the API answers the nodes only, so it is no way around the
// pages' logins and ACLs.
//
// Errors are {"error": "..."} with 403 (no key), 404 (not here) or 503 (starting).

import (
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// ErrNotHere: the group or partition is not on this node (a Source answers it).
var ErrNotHere = errors.New("console: not on this node")

func (c *Console) internalRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/console/node", c.api(func(r *http.Request) (any, error) {
		q := r.URL.Query()
		return c.local(r.Context(), Want{Node: q.Get("node") != "", Topics: q["topic"], Groups: q["group"],
			Parts: q["parts"], AllParts: q.Get("all_parts") != ""}), nil
	}))
	mux.HandleFunc("GET /v1/console/group", c.api(func(r *http.Request) (any, error) {
		g, ok := c.src.Group(r.URL.Query().Get("name"))
		if !ok {
			return nil, ErrNotHere
		}
		return g, nil
	}))
	mux.HandleFunc("GET /v1/console/records", c.api(func(r *http.Request) (any, error) {
		q := r.URL.Query()
		p, err1 := strconv.ParseInt(q.Get("partition"), 10, 32)
		off, err2 := strconv.ParseInt(q.Get("offset"), 10, 64)
		maxBytes, err3 := strconv.ParseInt(q.Get("max_bytes"), 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, badRequest{err}
		}
		return c.src.Read(q.Get("topic"), int32(p), off, min(maxBytes, maxPageBytes))
	}))
	mux.HandleFunc("GET /v1/console/offset", c.api(func(r *http.Request) (any, error) {
		q := r.URL.Query()
		p, err1 := strconv.ParseInt(q.Get("partition"), 10, 32)
		ts, err2 := strconv.ParseInt(q.Get("timestamp"), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, badRequest{err}
		}
		off, err := c.src.OffsetForTimestamp(q.Get("topic"), int32(p), ts)
		return map[string]int64{"offset": off}, err
	}))
	if c.admin == nil {
		return
	}
	mux.HandleFunc("POST /v1/console/group/commit", c.api(func(r *http.Request) (any, error) {
		var body groupWrite
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			return nil, badRequest{err}
		}
		return map[string]string{}, c.admin.CommitOffsets(r.Context(), body.Group, body.Offsets)
	}))
	mux.HandleFunc("POST /v1/console/group/delete", c.api(func(r *http.Request) (any, error) {
		var body groupWrite
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			return nil, badRequest{err}
		}
		return map[string]string{}, c.admin.DeleteGroup(r.Context(), body.Group)
	}))
}

// peerKeyHeader carries the cluster's console key (Source.PeerKey, base64) on
// requests between nodes.
const peerKeyHeader = "X-Skiff-Console-Key"

// fromPeer: r carries the cluster's console key.
func (c *Console) fromPeer(r *http.Request) bool {
	key := c.src.PeerKey()
	got, err := base64.StdEncoding.DecodeString(r.Header.Get(peerKeyHeader))
	return len(key) > 0 && err == nil && subtle.ConstantTimeCompare(got, key) == 1
}

type badRequest struct{ error }

// api wraps an internal API handler: JSON out, errors as {"error": ...}.
func (c *Console) api(fn func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !c.src.Started() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "the node is starting"})
			return
		}
		if !c.fromPeer(r) {
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "only the cluster's nodes may use /v1/console/ (the console key is missing or wrong)"})
			return
		}
		start := time.Now()
		v, err := fn(r)
		if err != nil {
			status := http.StatusInternalServerError
			var br badRequest
			switch {
			case errors.Is(err, ErrNotHere):
				status = http.StatusNotFound
			case errors.As(err, &br):
				status = http.StatusBadRequest
			}
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		body, err := json.Marshal(v)
		if err != nil {
			c.logger.Error("console: answer not encoded", "path", r.URL.Path, "err", err)
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		if _, err := w.Write(body); err != nil {
			c.logger.Debug("console: answer not sent", "path", r.URL.Path, "took", time.Since(start), "err", err)
		}
	}
}
