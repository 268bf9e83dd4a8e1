package client

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"skiff/internal/freeport"
)

// TestProduceLinesCountsFailures produces to an address where nothing
// listens: every record must be counted as failed, none as acknowledged, and
// an input error after the third line must be reported with the stats.
func TestProduceLinesCountsFailures(t *testing.T) {
	port, err := freeport.Pick("127.0.0.1") // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.DefaultProduceTopic("t"),
		kgo.RecordDeliveryTimeout(time.Second),
		kgo.DialTimeout(time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	boom := errors.New("boom")
	in := io.MultiReader(strings.NewReader("a\nb\nc\n"), iotest.ErrReader(boom))
	st, err := produceLines(ctx, cl, in, nil)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "read input after 3 lines") {
		t.Fatalf("produceLines: err = %v; want the input error after 3 lines", err)
	}
	if st.Records != 3 || st.Failed != 3 || st.Acked != 0 || st.FirstErr == nil {
		t.Fatalf("stats = %+v; want 3 records, 3 failed, 0 acked and a first error", st)
	}
}
