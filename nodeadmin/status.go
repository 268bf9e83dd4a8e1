package nodeadmin

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"

	"skiff/appliance"
	"skiff/client"
)

// WriteStatus writes the status as readable tables, or as indented JSON.
func WriteStatus(w io.Writer, st appliance.ClusterStatus, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	yesNo := map[bool]string{true: "yes", false: "NO"}
	controller := "none"
	if st.ControllerID >= 0 {
		controller = fmt.Sprintf("node %d", st.ControllerID)
	}
	fmt.Fprintf(w, "cluster %s (answered by node %d)\n", st.ClusterID, st.NodeID)
	fmt.Fprintf(w, "controller: %s\n", controller)
	fmt.Fprintf(w, "etcd quorum: %s", yesNo[st.Quorum])
	if !st.Quorum && st.QuorumError != "" {
		fmt.Fprintf(w, " (%s)", st.QuorumError)
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "\netcd members: %d\n", len(st.Members))
	if st.MembersError != "" {
		fmt.Fprintf(w, "  %s\n", st.MembersError)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(st.Members) > 0 {
		fmt.Fprintln(tw, "NODE\tMEMBER\tID\tROLE\tPEER URL\tCLIENT URL\tHEALTH")
	}
	for _, m := range st.Members {
		node := "?"
		if m.NodeID >= 0 {
			node = strconv.Itoa(int(m.NodeID))
		}
		name := m.Name
		if name == "" {
			name = "(not started)"
		}
		role := "voter"
		switch {
		case m.Learner:
			role = "learner"
		case m.Leader:
			role = "leader"
		}
		health := "healthy"
		if !m.Healthy {
			health = "UNHEALTHY: " + m.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", node, name, m.ID, role,
			strings.Join(m.PeerURLs, ","), orDash(strings.Join(m.ClientURLs, ",")), health)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	live := 0
	for _, b := range st.Brokers {
		if b.Live {
			live++
		}
	}
	fmt.Fprintf(w, "\nbrokers: %d live\n", live)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(st.Brokers) > 0 {
		fmt.Fprintln(tw, "ID\tADDRESS\tRACK\tREPLICAS\tLEADERS")
	}
	for _, b := range st.Brokers {
		addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		if !b.Live {
			addr = "DOWN (no session)"
		}
		if b.Draining {
			addr += " (draining)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\n", b.ID, addr, orDash(b.Rack), b.Replicas, b.Leaders)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\n%s in %s; %d offline, %d under-replicated\n",
		client.CountOf(st.Partitions, "partition"), client.CountOf(st.Topics, "topic"), len(st.OfflinePartitions), len(st.UnderReplicatedPartitions))
	for _, group := range []struct {
		title string
		parts []appliance.PartitionStatus
	}{{"offline partitions (no leader)", st.OfflinePartitions}, {"under-replicated partitions (ISR smaller than replicas)", st.UnderReplicatedPartitions}} {
		if len(group.parts) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s:\n", group.title)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  TOPIC\tPARTITION\tLEADER\tREPLICAS\tISR")
		for _, p := range group.parts {
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\n", p.Topic, p.Partition, p.Leader, ids(p.Replicas), ids(p.ISR))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ids(list []int32) string {
	parts := make([]string, len(list))
	for i, id := range list {
		parts[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(parts, ",") + "]"
}
