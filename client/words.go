package client

import "strconv"

// CountOf is "1 group", "2 groups".
func CountOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
