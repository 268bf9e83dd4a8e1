package bench

import "testing"

func TestBaselineVolume(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{{0, 64 << 20}, {100 << 20, 100 << 20}, {10 << 30, 4 << 30}} {
		if got := baselineVolume(tc.in); got != tc.want {
			t.Errorf("baselineVolume(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
