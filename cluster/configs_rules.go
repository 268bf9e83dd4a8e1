package cluster

// The value rules of topic configs: Kafka's ConfigDef types, ranges and value sets,
// refusing what Kafka 4.x refuses with the reason Kafka gives, so that a client
// sees the same error text from Skiff as from a Kafka broker.

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// rule is how a config's values are checked: its type's parse, then its bounds or
// value set. valid describes the accepted values as Kafka's documentation does.
type rule struct {
	check func(string) error
	valid string
}

// Kafka's parse errors (ConfigDef.parseType).
var (
	errNotInt    = errors.New("Not a number of type INT")
	errNotLong   = errors.New("Not a number of type LONG")
	errNotDouble = errors.New("Not a number of type DOUBLE")
	errNotBool   = errors.New("Expected value to be either true or false")
)

func parseInt(v string, bits int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits)
	if err != nil {
		if bits == 32 {
			return 0, errNotInt
		}
		return 0, errNotLong
	}
	return n, nil
}

// intRule is an INT (bits 32) or LONG (bits 64) config between lo and hi
// (Kafka's Range.atLeast when hi is the type's largest value, else Range.between).
func intRule(bits int, lo, hi int64) rule {
	top := int64(math.MaxInt64)
	if bits == 32 {
		top = math.MaxInt32
	}
	r := rule{valid: fmt.Sprintf("[%d,...]", lo)}
	if hi != top {
		r.valid = fmt.Sprintf("[%d,...,%d]", lo, hi)
	}
	r.check = func(v string) error {
		n, err := parseInt(v, bits)
		switch {
		case err != nil:
			return err
		case hi == top && n < lo:
			return fmt.Errorf("Value must be at least %d", lo)
		case n < lo:
			return fmt.Errorf("Value must be no less than %d", lo)
		case n > hi:
			return fmt.Errorf("Value must be no more than %d", hi)
		}
		return nil
	}
	return r
}

// anyInt is an INT (bits 32) or LONG (bits 64) config without bounds.
func anyInt(bits int) rule {
	return rule{valid: "", check: func(v string) error { _, err := parseInt(v, bits); return err }}
}

// doubleRule is a DOUBLE config between lo and hi.
func doubleRule(lo, hi float64) rule {
	return rule{valid: fmt.Sprintf("[%g,...,%g]", lo, hi), check: func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		switch {
		case err != nil || math.IsNaN(f):
			return errNotDouble
		case f < lo:
			return fmt.Errorf("Value must be no less than %g", lo)
		case f > hi:
			return fmt.Errorf("Value must be no more than %g", hi)
		}
		return nil
	}}
}

// boolRule is a BOOLEAN config: true or false in any case, as Kafka parses them.
var boolRule = rule{valid: "", check: func(v string) error {
	_, err := parseBool(v)
	return err
}}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errNotBool
}

// oneOf is a STRING config from a fixed set (Kafka's ValidString.in: exact case).
func oneOf(allowed ...string) rule {
	return rule{valid: "[" + strings.Join(allowed, ", ") + "]", check: func(v string) error {
		return checkOneOf(strings.TrimSpace(v), allowed)
	}}
}

func checkOneOf(v string, allowed []string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("String must be one of: %s", strings.Join(allowed, ", "))
}

// listOf is a LIST config whose items come from a fixed set (Kafka's ValidList.in).
func listOf(allowed ...string) rule {
	return rule{valid: "[" + strings.Join(allowed, ", ") + "]", check: func(v string) error {
		for _, item := range splitConfigList(v) {
			if err := checkOneOf(item, allowed); err != nil {
				return err
			}
		}
		return nil
	}}
}

// splitConfigList splits a LIST value as Kafka does: on commas, each item trimmed;
// an empty (or blank) value is the empty list.
func splitConfigList(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// throttledReplicas is the value set of the replication throttle lists: empty, the
// wildcard *, or partition:broker pairs (Kafka's ThrottledReplicaListValidator).
var throttledReplicas = rule{valid: "[partitionId]:[brokerId],[partitionId]:[brokerId],... or *", check: func(v string) error {
	items := splitConfigList(v)
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, item := range items {
		p, b, ok := strings.Cut(item, ":")
		if _, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32); ok && err == nil {
			if _, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32); err == nil {
				continue
			}
		}
		return errors.New("must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
	}
	return nil
}}

// gzipLevel is compression.gzip.level: 1 to 9, or -1 for the codec's default.
var gzipLevel = rule{valid: "[1,...,9] or -1", check: func(v string) error {
	n, err := parseInt(v, 32)
	if err != nil {
		return err
	}
	if n != -1 && (n < 1 || n > 9) {
		return errors.New("Value must be between 1 and 9 or equal to -1")
	}
	return nil
}}

// onlyFalse is a BOOLEAN config whose true asks for a feature Skiff does not have
// (remote.storage.enable: tiered storage); true is refused with reason.
func onlyFalse(reason string) rule {
	return rule{valid: "false", check: func(v string) error {
		b, err := parseBool(v)
		if err == nil && b {
			return errors.New(reason)
		}
		return err
	}}
}
