package console

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/acl"
	"skiff/cluster"
	"skiff/internal/batch"
)

type recordRow struct {
	Offset     int64
	Time       string
	Key, Value shown
	Headers    []headerRow
}

type headerRow struct {
	Key   string
	Value shown
}

type messagesData struct {
	Topic         string
	PartitionList []int32
	Partition     int32
	From, At      string
	Limit         int
	Format        string
	Formats       []string
	Query         string
	LogStart, HWM int64
	First, Last   int64
	Fetched       int
	Capped        bool
	Records       []recordRow
	NextURL       string
	Err           string
}

// defaultLast is how many records the browser shows when asked for nothing else.
const defaultLast = 50

// messages is GET /topics/{topic}/messages?partition=P and one of offset=O,
// timestamp=MS or last=N (the form sends from=offset|timestamp|last and at=),
// limit=N (at most 500), format=auto|text|json|hex, q=text (only the records of
// the page holding it). It reads from the partition's leader, never past its high
// watermark, at most 4 MiB a page.
func (c *Console) messages(r *http.Request) (rendered, error) {
	name := r.PathValue("topic")
	snap, t, err := c.topicOf(r, name, acl.OpRead)
	if err != nil {
		return rendered{}, err
	}
	q := r.URL.Query()
	d := messagesData{Topic: name, Formats: []string{formatAuto, formatText, formatJSON, formatHex}, Format: q.Get("format"), Query: q.Get("q")}
	for p := range t.Partitions {
		d.PartitionList = append(d.PartitionList, p)
	}
	if !slices.Contains(d.Formats, d.Format) {
		d.Format = formatAuto
	}
	p, err := strconv.ParseInt(cmp.Or(q.Get("partition"), "0"), 10, 32)
	if err != nil || p < 0 || int32(p) >= t.Partitions {
		return rendered{}, badInput("partition %q: %s has partitions 0 to %d", q.Get("partition"), name, t.Partitions-1)
	}
	d.Partition = int32(p)
	d.From, d.At = q.Get("from"), q.Get("at")
	for _, k := range []string{"offset", "timestamp", "last"} {
		if q.Has(k) {
			d.From, d.At = k, q.Get(k)
		}
	}
	if d.From == "" {
		d.From, d.At = "last", strconv.Itoa(defaultLast)
	}
	d.Limit = intParam(q, "limit", defaultLast, 1, maxPageRecords)
	at, err := strconv.ParseInt(d.At, 10, 64)
	if err != nil || at < 0 {
		return rendered{}, badInput("%s %q: want a whole number of at least 0", d.From, d.At)
	}
	st, _ := snap.Partition(name, d.Partition)
	read := c.reader(r.Context(), snap, st.Leader, name, d.Partition)
	marks, err := read(-1, 0)
	if err != nil {
		d.Err = err.Error()
		return rendered{page: "messages", title: "Messages of " + name, section: "topics", data: d}, nil
	}
	d.LogStart, d.HWM = marks.LogStart, marks.HWM
	var start int64
	switch d.From {
	case "offset":
		start = at
	case "timestamp":
		start, err = c.offsetFor(r.Context(), snap, st.Leader, name, d.Partition, at)
		if err != nil {
			d.Err = err.Error()
			return rendered{page: "messages", title: "Messages of " + name, section: "topics", data: d}, nil
		}
	case "last":
		n := min(at, maxPageRecords)
		d.Limit = int(n)
		start = d.HWM - n
	default:
		return rendered{}, badInput("from %q: want offset, timestamp or last", d.From)
	}
	start = min(max(start, d.LogStart), d.HWM)
	recs, next, capped, err := readRecords(read, start, d.HWM, d.Limit)
	if err != nil {
		d.Err = err.Error()
	}
	d.Capped = capped
	d.Fetched = len(recs)
	for _, rec := range recs {
		row := recordRow{Offset: rec.Offset, Time: rec.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"),
			Key: show(rec.Key, d.Format), Value: show(rec.Value, d.Format)}
		match := d.Query == "" || bytes.Contains(rec.Key, []byte(d.Query)) || bytes.Contains(rec.Value, []byte(d.Query))
		for _, h := range rec.Headers {
			row.Headers = append(row.Headers, headerRow{Key: h.Key, Value: show(h.Value, d.Format)})
			match = match || bytes.Contains([]byte(h.Key), []byte(d.Query)) || bytes.Contains(h.Value, []byte(d.Query))
		}
		if match {
			d.Records = append(d.Records, row)
		}
	}
	if len(recs) > 0 {
		d.First, d.Last = recs[0].Offset, recs[len(recs)-1].Offset
	}
	if next < d.HWM && len(recs) > 0 {
		u := url.Values{"partition": {strconv.Itoa(int(d.Partition))}, "offset": {strconv.FormatInt(next, 10)}, "limit": {strconv.Itoa(d.Limit)}, "format": {d.Format}}
		if d.Query != "" {
			u.Set("q", d.Query)
		}
		d.NextURL = "/topics/" + url.PathEscape(name) + "/messages?" + u.Encode()
	}
	return rendered{page: "messages", title: "Messages of " + name, section: "topics", data: d}, nil
}

// readFunc reads batches of one partition from offset (-1: only its marks).
type readFunc func(offset, maxBytes int64) (Batches, error)

// reader reads from the partition's leader: this node directly, another over
// GET /v1/console/records.
func (c *Console) reader(ctx context.Context, snap *cluster.Snapshot, leader int32, topic string, p int32) readFunc {
	return func(offset, maxBytes int64) (Batches, error) {
		if leader == cluster.NoLeader {
			return Batches{}, fmt.Errorf("partition %d of %s has no leader: its records cannot be read now", p, topic)
		}
		if leader == c.src.NodeID() {
			return c.src.Read(topic, p, offset, maxBytes)
		}
		b, ok := snap.Broker(leader)
		if !ok {
			return Batches{}, fmt.Errorf("the leader of partition %d, node %d, is not live", p, leader)
		}
		var out Batches
		q := url.Values{"topic": {topic}, "partition": {strconv.Itoa(int(p))}, "offset": {strconv.FormatInt(offset, 10)}, "max_bytes": {strconv.FormatInt(maxBytes, 10)}}
		err := c.peerGet(ctx, b, "/v1/console/records", q, &out)
		return out, err
	}
}

// offsetFor asks the leader for the first offset at or after ts.
func (c *Console) offsetFor(ctx context.Context, snap *cluster.Snapshot, leader int32, topic string, p int32, ts int64) (int64, error) {
	if leader == c.src.NodeID() {
		return c.src.OffsetForTimestamp(topic, p, ts)
	}
	b, ok := snap.Broker(leader)
	if !ok {
		return 0, fmt.Errorf("the leader of partition %d, node %d, is not live", p, leader)
	}
	var out struct {
		Offset int64 `json:"offset"`
	}
	q := url.Values{"topic": {topic}, "partition": {strconv.Itoa(int(p))}, "timestamp": {strconv.FormatInt(ts, 10)}}
	err := c.peerGet(ctx, b, "/v1/console/offset", q, &out)
	return out.Offset, err
}

// readRecords reads up to limit records from start below hwm, at most
// maxPageBytes of batches (more only when the first batch alone is bigger); next
// is the offset after the last batch read, capped whether a limit stopped it
// before hwm.
func readRecords(read readFunc, start, hwm int64, limit int) (recs []*kgo.Record, next int64, capped bool, err error) {
	next = start
	budget := int64(maxPageBytes)
	for next < hwm && len(recs) < limit {
		if budget <= 0 {
			return recs, next, true, nil
		}
		b, err := read(next, budget)
		if err != nil {
			return recs, next, false, err
		}
		if len(b.Data) == 0 {
			break
		}
		if int64(len(b.Data)) > budget && len(recs) > 0 {
			// Only the first batch of a page may pass the budget (a record bigger
			// than it must still be shown).
			return recs, next, true, nil
		}
		budget -= int64(len(b.Data))
		got, err := decodeBatches(b.Data, next, min(hwm, b.HWM))
		if err != nil {
			return recs, next, false, err
		}
		recs = append(recs, got...)
		after := next
		_ = batch.Split(b.Data, func(h batch.Header, _ []byte) error {
			after = max(after, h.NextOffset())
			return nil
		})
		if after <= next {
			break
		}
		next = after
	}
	if len(recs) > limit {
		next, recs = recs[limit].Offset, recs[:limit]
	}
	return recs, next, len(recs) == limit && next < hwm, nil
}
