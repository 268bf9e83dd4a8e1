package bench

// The rules of a valid run, checked before any connection: skiff bench's flags
// become a Config (cmd/skiff), and Check refuses what cannot run, in the flags'
// words, and fills what follows from the rest.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"skiff/client"
)

// MaxRecordSize is the largest record value a load produces.
const MaxRecordSize = 64 << 20

// maxLinger bounds Config.Linger.
const maxLinger = time.Minute

// Check refuses a produce or e2e load (or the load of compact) that cannot run
// and fills from its settings: Acks and Idempotent from AcksName (all or 1, its
// synonyms -1 and leader), Compression from CompressionName, DeliveryTimeout
// when unset. Records, Duration, Partitions, ReplicationFactor, Rate and
// ReadCommitted are the caller's: their flags say whether they were given.
func (cfg *Config) Check() error {
	if cfg.RecordSize < MinRecordSize || cfg.RecordSize > MaxRecordSize {
		return fmt.Errorf("--record-size must be from %d (the send stamp) to %d bytes, not %d", MinRecordSize, MaxRecordSize, cfg.RecordSize)
	}
	if cfg.Producers < 1 || cfg.Producers > 1024 {
		return fmt.Errorf("--producers must be from 1 to 1024, not %d", cfg.Producers)
	}
	switch strings.ToLower(cfg.AcksName) {
	case "all", "-1":
		cfg.AcksName = "all"
	case "1", "leader":
		cfg.AcksName = "1"
	default:
		return fmt.Errorf("invalid --acks %q: want all or 1 (latency is measured to the acknowledgement)", cfg.AcksName)
	}
	var err error
	if cfg.Acks, cfg.Idempotent, err = client.ParseAcks(cfg.AcksName); err != nil {
		return err
	}
	cfg.CompressionName = strings.ToLower(cfg.CompressionName)
	if cfg.Compression, err = client.ParseCompression(cfg.CompressionName); err != nil {
		return err
	}
	if cfg.Linger != -1 && (cfg.Linger < 0 || cfg.Linger > maxLinger) {
		return fmt.Errorf("--linger must be from 0 to %d ms, not %d", maxLinger.Milliseconds(), cfg.Linger.Milliseconds())
	}
	if cfg.TransactionalID != "" {
		switch {
		case cfg.TxnRecords < 1:
			return fmt.Errorf("--txn-records must be at least 1, not %d", cfg.TxnRecords)
		case cfg.Rate != 0:
			return errors.New("--transactional-id measures throughput: --rate does not apply")
		case cfg.TxnRounds < 0 || cfg.TxnRounds > 100:
			return fmt.Errorf("--rounds must be from 1 to 100, not %d", cfg.TxnRounds)
		case cfg.Records > 0 && cfg.Records < int64(max(cfg.TxnRounds, 1)*cfg.Producers):
			return fmt.Errorf("--records %d is fewer than --rounds × --producers (%d × %d): each producer needs a record in each round", cfg.Records, max(cfg.TxnRounds, 1), cfg.Producers)
		}
	}
	if cfg.DeliveryTimeout == 0 {
		cfg.DeliveryTimeout = client.DefaultDeliveryTimeout
	}
	if cfg.BaselineWarmUp != 0 {
		if err := CheckWarmUp(cfg.BaselineWarmUp); err != nil {
			return err
		}
		if !cfg.Baseline {
			return errors.New("--warm-up is for the baseline's bare replication: it needs --baseline")
		}
	}
	return nil
}

// CheckWarmUp refuses a warm-up (BaselineOptions.WarmUp) other than 1 MiB to 64 GiB.
func CheckWarmUp(n int64) error {
	if n < BaselineChunk || n > 64<<30 {
		return fmt.Errorf("--warm-up must be from %d (1 MiB) to 64 GiB, not %d", BaselineChunk, n)
	}
	return nil
}

// CheckBaselineBytes refuses a baseline of other than 1 MiB to 64 GiB per measurement.
func CheckBaselineBytes(n int64) error {
	if n < BaselineChunk || n > 64<<30 {
		return fmt.Errorf("--bytes must be from %d (1 MiB) to 64 GiB, not %d", BaselineChunk, n)
	}
	return nil
}

// CheckDir refuses a --dir for the baseline's or the null server's files that
// is not a directory.
func CheckDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--dir %s is not a directory", dir)
	}
	return nil
}

// Check refuses a compact run that cannot run, and checks its load (Config.Check,
// with the load's record size capped at 1 MiB).
func (cfg *CompactConfig) Check() error {
	lc := &cfg.Load
	switch {
	case cfg.Keys < 1 || cfg.Overwrites < 1:
		return fmt.Errorf("--keys and --overwrites must be at least 1, not %d and %d", cfg.Keys, cfg.Overwrites)
	case cfg.Rounds < 1 || cfg.Rounds > 1000:
		return fmt.Errorf("--rounds must be from 1 to 1000, not %d", cfg.Rounds)
	case lc.RecordSize < MinRecordSize || lc.RecordSize > 1<<20:
		return fmt.Errorf("--record-size must be from %d to %d bytes, not %d", MinRecordSize, 1<<20, lc.RecordSize)
	case int64(cfg.Keys)*int64(cfg.Overwrites)*int64(lc.RecordSize+40) > 1<<31-1:
		return fmt.Errorf("%d keys x %d overwrites of %d bytes do not fit in one segment of 2 GiB: give fewer", cfg.Keys, cfg.Overwrites, lc.RecordSize)
	case lc.Topic == "":
		return fmt.Errorf("--topic must not be empty")
	}
	if err := CheckDir(lc.Dir); err != nil {
		return err
	}
	return lc.Check()
}
