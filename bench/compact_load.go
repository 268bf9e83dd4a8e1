package bench

// Step 3 of skiff bench compact (compact.go): the produce load on <T>-load while
// the cleaner compacts a freshly sealed fill, against the same load without
// cleaning, in several rounds.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"skiff/client"
)

// CompactRound is one round of the produce load: a window while the cleaner
// compacts one fill (its Topic), and a window about as long without cleaning.
// Rounds alternate which comes first, so that a drift of the machine's speed
// (other work on it) falls on both sides.
type CompactRound struct {
	Topic            string    `json:"topic"`
	CleaningFirst    bool      `json:"cleaning_first"`
	CleaningMBPerSec float64   `json:"cleaning_mb_per_sec"`
	AloneMBPerSec    float64   `json:"alone_mb_per_sec"`
	Ratio            float64   `json:"ratio"`
	LoadSeconds      float64   `json:"load_seconds"` // the loaded window
	AloneSeconds     float64   `json:"alone_seconds"`
	CleanBusySeconds float64   `json:"clean_busy_seconds"` // the pass, by the broker's metrics
	CleaningCPU      WindowCPU `json:"cleaning_cpu"`
	AloneCPU         WindowCPU `json:"alone_cpu"`
}

// WindowCPU is where the CPU went during one window, in cores (CPU seconds per
// second of the window): whether the cleaner costs producers CPU or I/O.
type WindowCPU struct {
	Broker        float64 `json:"broker_cores"`         // the broker's process_cpu_seconds_total
	Client        float64 `json:"client_cores"`         // this process: the producers
	MachineBusy   float64 `json:"machine_busy_cores"`   // every process (/proc/stat), other work included
	MachineIOWait float64 `json:"machine_iowait_cores"` // idle with I/O outstanding
}

// machineTimes is the machine's CPU time so far, in seconds (machineCPU).
type machineTimes struct{ total, idle, iowait float64 }

// cpuMark is the CPU counters at one instant.
type cpuMark struct {
	at      time.Time
	broker  float64
	client  time.Duration
	machine machineTimes
}

func markCPU(broker float64) cpuMark {
	return cpuMark{at: time.Now(), broker: broker, client: cpuTime(), machine: machineCPU()}
}

// since returns the CPU used from m to now, per second.
func (m cpuMark) since(now cpuMark) WindowCPU {
	s := now.at.Sub(m.at).Seconds()
	if s <= 0 {
		return WindowCPU{}
	}
	total := now.machine.total - m.machine.total
	idle, iowait := now.machine.idle-m.machine.idle, now.machine.iowait-m.machine.iowait
	return WindowCPU{Broker: (now.broker - m.broker) / s, Client: (now.client - m.client).Seconds() / s,
		MachineBusy: (total - idle - iowait) / s, MachineIOWait: iowait / s}
}

// produceRounds runs cfg.Rounds rounds: each fills a compacted topic (the first
// is <T>-b, then <T>-b2, ...), then produces to <T>-load while the cleaner
// compacts it and as long again without, and fills res with the median ratio.
func produceRounds(ctx context.Context, cfg CompactConfig, res *CompactResult) error {
	lc := cfg.Load
	load := lc
	load.Mode, load.Topic, load.Records, load.Duration = Produce, lc.Topic+"-load", 0, 0
	// Created first, so that the first loaded window does not wait for it.
	admin, err := client.New(lc.Client)
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, _, err := ensureTopic(ctx, admin, load); err != nil {
		return err
	}
	prev := time.Duration(0)
	for i := range max(cfg.Rounds, 1) {
		topic := lc.Topic + "-b"
		if i > 0 {
			topic = fmt.Sprintf("%s-b%d", lc.Topic, i+1)
		}
		t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
		if _, err := fillCompacted(ctx, lc, topic, cfg.Keys, cfg.Overwrites, t0); err != nil {
			return err
		}
		syncFilesystems() // the fill's writeback is no window's
		r := CompactRound{Topic: topic, CleaningFirst: i%2 == 0 || prev == 0}
		var err error
		if r.CleaningFirst {
			if err = cleaningWindow(ctx, cfg, load, topic, t0, &r); err == nil {
				err = aloneWindow(ctx, cfg, load, time.Duration(r.LoadSeconds*float64(time.Second)), &r)
			}
		} else {
			if err = aloneWindow(ctx, cfg, load, prev, &r); err == nil {
				err = cleaningWindow(ctx, cfg, load, topic, t0, &r)
			}
		}
		if err != nil {
			return err
		}
		if r.AloneMBPerSec > 0 {
			r.Ratio = r.CleaningMBPerSec / r.AloneMBPerSec
		}
		prev = time.Duration(r.LoadSeconds * float64(time.Second))
		res.Rounds = append(res.Rounds, r)
		res.LoadSeconds += r.LoadSeconds
		res.CleanBusySeconds += r.CleanBusySeconds
	}
	pick := func(f func(CompactRound) float64) []float64 {
		v := make([]float64, len(res.Rounds))
		for i, r := range res.Rounds {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v
	}
	ratios := pick(func(r CompactRound) float64 { return r.Ratio })
	res.ProduceRatio, res.ProduceRatioMin, res.ProduceRatioMax = median(ratios), ratios[0], ratios[len(ratios)-1]
	res.ProduceCleaningMBPerSec = median(pick(func(r CompactRound) float64 { return r.CleaningMBPerSec }))
	res.ProduceAloneMBPerSec = median(pick(func(r CompactRound) float64 { return r.AloneMBPerSec }))
	return nil
}

// median of sorted values.
func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// cleaningWindow seals topic's fill and produces the load until the cleaner's
// pass over it ends.
func cleaningWindow(ctx context.Context, cfg CompactConfig, load Config, topic string, t0 time.Time, r *CompactRound) error {
	before, err := scrapeCleaner(ctx, cfg.HTTP)
	if err != nil {
		return err
	}
	start := markCPU(before.cpu)
	if err := rollTopic(ctx, cfg.Load, topic, t0); err != nil {
		return err
	}
	loadCtx, endLoad := context.WithCancel(ctx)
	defer endLoad()
	passDone := make(chan error, 1)
	var after cleanerMetrics
	var size int64
	go func() {
		var err error
		after, err = waitPass(loadCtx, cfg.HTTP, before, cfg.Load.Client.Timeout, &size)
		endLoad()
		passDone <- err
	}()
	during, err := runProduce(loadCtx, load, nil)
	endLoad()
	perr := <-passDone
	switch {
	case perr != nil && ctx.Err() == nil:
		return fmt.Errorf("%s: %w", topic, perr)
	case err != nil && ctx.Err() == nil && loadCtx.Err() != nil:
		return fmt.Errorf("the pass over %s ended before the produce load started: give a larger fill (--keys, --overwrites, --record-size)", topic)
	case err != nil:
		return err
	}
	r.CleaningCPU = start.since(markCPU(after.cpu))
	r.CleanBusySeconds = after.seconds - before.seconds
	r.LoadSeconds, r.CleaningMBPerSec = during.Seconds, during.MBPerSec
	return nil
}

// aloneWindow produces the load for d (at least a second) without cleaning.
func aloneWindow(ctx context.Context, cfg CompactConfig, load Config, d time.Duration, r *CompactRound) error {
	before, err := scrapeCleaner(ctx, cfg.HTTP)
	if err != nil {
		return err
	}
	start := markCPU(before.cpu)
	load.Duration = max(d, time.Second)
	alone, err := runProduce(ctx, load, nil)
	if err != nil {
		return err
	}
	after, err := scrapeCleaner(ctx, cfg.HTTP)
	if err != nil {
		return err
	}
	if after.passes != before.passes {
		return fmt.Errorf("the cleaner ran a pass during the window without cleaning: is something else writing compacted topics?")
	}
	r.AloneCPU = start.since(markCPU(after.cpu))
	r.AloneSeconds, r.AloneMBPerSec = alone.Seconds, alone.MBPerSec
	return nil
}
