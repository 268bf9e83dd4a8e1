package bench

import (
	"strings"
	"testing"
	"time"

	"skiff/client"
)

func TestConfigCheck(t *testing.T) {
	valid := func() Config {
		return Config{RecordSize: 1024, Producers: 1, AcksName: "leader", CompressionName: "LZ4", Linger: -1}
	}
	cfg := valid()
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	if cfg.AcksName != "1" || cfg.Idempotent || cfg.CompressionName != "lz4" || cfg.DeliveryTimeout != client.DefaultDeliveryTimeout {
		t.Errorf("filled: acks %q idempotent %v compression %q delivery timeout %v", cfg.AcksName, cfg.Idempotent, cfg.CompressionName, cfg.DeliveryTimeout)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.RecordSize = MinRecordSize - 1 }, "--record-size must be from 8"},
		{func(c *Config) { c.RecordSize = MaxRecordSize + 1 }, "--record-size must be from 8"},
		{func(c *Config) { c.Producers = 1025 }, "--producers must be from 1 to 1024"},
		{func(c *Config) { c.AcksName = "0" }, `invalid --acks "0"`},
		{func(c *Config) { c.CompressionName = "brotli" }, "invalid --compression"},
		{func(c *Config) { c.Linger = 61 * time.Second }, "--linger must be from 0 to 60000 ms, not 61000"},
		{func(c *Config) { c.TransactionalID = "t" }, "--txn-records must be at least 1"},
		{func(c *Config) { c.TransactionalID, c.TxnRecords, c.Rate = "t", 10, 5 }, "--rate does not apply"},
		{func(c *Config) { c.TransactionalID, c.TxnRecords, c.TxnRounds = "t", 10, 101 }, "--rounds must be from 1 to 100"},
		{func(c *Config) { c.TransactionalID, c.TxnRecords, c.Records, c.Producers = "t", 10, 2, 3 }, "fewer than --rounds × --producers (1 × 3)"},
		{func(c *Config) { c.BaselineWarmUp = 1 }, "--warm-up must be from"},
		{func(c *Config) { c.BaselineWarmUp = BaselineChunk }, "needs --baseline"},
	} {
		cfg := valid()
		tc.change(&cfg)
		if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", cfg, err, tc.want)
		}
	}
	if err := CheckDir(t.TempDir()); err != nil {
		t.Error(err)
	}
}
