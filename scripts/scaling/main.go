// Command scaling measures one node's cost curve as its partition count grows
// (docs/scaling.md): for each count it starts `skiff serve` on a fresh data
// directory, creates topics of up to 100 partitions, and measures idle RSS, idle
// CPU, open files, produce throughput spread over every partition, the SIGTERM
// stop time, and the time to /readyz after a clean restart and after SIGKILL. It
// prints one JSON line per round, then a Markdown table (medians over the
// rounds), and writes the table and an SVG chart where asked.
//
//	go run ./scripts/scaling -skiff ./skiff -partitions 100,1000,5000,10000 -rounds 3 -svg docs/scaling.svg
//
// With -baseline BIN every round runs that binary too, alternating which goes
// first, and the output adds a table of the new build's medians over the
// baseline's (same-run ratios).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	var (
		bin     = flag.String("skiff", "./skiff", "the skiff binary to measure")
		base    = flag.String("baseline", "", "also measure this skiff `binary` in every round, as the baseline")
		counts  = flag.String("partitions", "100,1000,5000,10000", "partition counts, comma-separated")
		rounds  = flag.Int("rounds", 3, "rounds per partition count")
		work    = flag.String("dir", os.TempDir(), "where the data directories go (each is deleted after its round)")
		svg     = flag.String("svg", "", "also write the chart to `FILE` (SVG)")
		table   = flag.String("table", "", "also write the table to `FILE` (Markdown)")
		idle    = flag.Duration("idle", 10*time.Second, "how long idle CPU is measured")
		produce = flag.Duration("produce", 10*time.Second, "how long the produce run lasts")
		conns   = flag.Int("connections", 0, "instead of partition counts: hold `N` idle client connections to a node without topics")
		data    = flag.Float64("data", 0, "instead of partition counts: fill one partition with `GB` gigabytes and time /readyz after SIGKILL")
		segs    = flag.Int("segments", 1000, "with -data: how many segments the data fills")
		cluster = flag.Int("cluster-topics", 0, "instead of partition counts: a 3-node cluster creates `N` topics of 6 partitions with 3 replicas")
		segFile = flag.Int("segment-files", 0, "instead of the partition curve: give each of -partitions partitions `N` segments and count the node's open files")
		serve   = flag.String("serve-flags", "", "with -segment-files: more flags for skiff serve (not the baseline's), space-separated (e.g. --segment-file-cache 64)")
	)
	flag.IntVar(&portBase, "port-base", 0, "take the nodes' ports from `PORT`..PORT+99 in turn instead of free ports the kernel picks")
	flag.Parse()
	ns, err := parseCounts(*counts)
	if err != nil {
		log.Fatal(err)
	}
	builds := []struct{ name, bin string }{{"", *bin}}
	if *base != "" {
		builds = []struct{ name, bin string }{{"base", *base}, {"new", *bin}}
	}
	if *conns > 0 {
		dir, err := os.MkdirTemp(*work, "skiff-scaling-")
		if err != nil {
			log.Fatal(err)
		}
		res, err := measureConnections(context.Background(), config{bin: *bin, work: dir, idle: *idle}, *conns)
		if err != nil {
			log.Fatalf("%d connections: %v (data and log kept in %s)", *conns, err, dir)
		}
		line, _ := json.Marshal(res)
		fmt.Println(string(line))
		if err := os.RemoveAll(dir); err != nil {
			log.Fatal(err)
		}
		return
	}
	if *segFile > 0 {
		for _, n := range ns {
			for r := 1; r <= *rounds; r++ {
				for i := range builds {
					b := builds[(i+r-1)%len(builds)]
					dir, err := os.MkdirTemp(*work, "skiff-scaling-")
					if err != nil {
						log.Fatal(err)
					}
					cfg := config{bin: b.bin, work: dir, partitions: n}
					if b.name != "base" {
						cfg.extra = strings.Fields(*serve) // a baseline may not know them
					}
					res, err := measureSegmentFiles(context.Background(), cfg, *segFile)
					res.Build, res.Round = b.name, r
					line, _ := json.Marshal(res)
					fmt.Println(string(line))
					if err != nil {
						log.Fatalf("%s %d partitions, round %d: %v (data and log kept in %s)", b.name, n, r, err, dir)
					}
					if err := os.RemoveAll(dir); err != nil {
						log.Fatal(err)
					}
				}
			}
		}
		return
	}
	if *cluster > 0 {
		for r := 1; r <= *rounds; r++ {
			for i := range builds {
				b := builds[(i+r-1)%len(builds)]
				dir, err := os.MkdirTemp(*work, "skiff-scaling-")
				if err != nil {
					log.Fatal(err)
				}
				res, err := measureCluster(context.Background(), config{bin: b.bin, work: dir}, *cluster, 6)
				res.Build, res.Round = b.name, r
				line, _ := json.Marshal(res)
				fmt.Println(string(line))
				if err != nil {
					log.Fatalf("%s cluster, round %d: %v (data and logs kept in %s)", b.name, r, err, dir)
				}
				if err := os.RemoveAll(dir); err != nil {
					log.Fatal(err)
				}
			}
		}
		return
	}
	if *data > 0 {
		dir, err := os.MkdirTemp(*work, "skiff-scaling-")
		if err != nil {
			log.Fatal(err)
		}
		rs, err := measureData(context.Background(), config{bin: *bin, work: dir}, builds, *data, *segs, *rounds)
		for _, r := range rs {
			line, _ := json.Marshal(r)
			fmt.Println(string(line))
		}
		if err != nil {
			log.Fatalf("%g GB: %v (data and log kept in %s)", *data, err, dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			log.Fatal(err)
		}
		return
	}
	var all []result
	for _, n := range ns {
		for r := 1; r <= *rounds; r++ {
			for i := range builds {
				b := builds[(i+r-1)%len(builds)] // alternate which build goes first
				dir, err := os.MkdirTemp(*work, "skiff-scaling-")
				if err != nil {
					log.Fatal(err)
				}
				res, err := measure(context.Background(), config{bin: b.bin, work: dir, partitions: n, idle: *idle, produce: *produce})
				if err != nil {
					log.Fatalf("%s %d partitions, round %d: %v (data and log kept in %s)", b.name, n, r, err, dir)
				}
				res.Round, res.Build = r, b.name
				line, _ := json.Marshal(res)
				fmt.Println(string(line))
				all = append(all, res)
				if err := os.RemoveAll(dir); err != nil {
					log.Fatal(err)
				}
			}
		}
	}
	rows := medians(all)
	md := markdownTable(rows)
	if *base != "" {
		md += "\n" + ratioTable(rows)
	}
	fmt.Print(md)
	for _, f := range []struct{ path, text string }{{*table, md}, {*svg, chart(ofBuild(rows, builds[len(builds)-1].name))}} {
		if f.path == "" {
			continue
		}
		if err := os.WriteFile(f.path, []byte(f.text), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func parseCounts(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad partition count %q", f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}
