package psclient

import (
	"testing"
	"time"
)

func TestRate(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		d    time.Duration
		want float64
	}{
		{1000, 2 * time.Second, 500},
		{10, 3 * time.Second, 3.3}, // cut to a tenth, not rounded
		{2, 3 * time.Second, 0.6},
		{5, 0, 0},
		{5, -time.Second, 0},
		{0, time.Second, 0},
	} {
		if got := Rate(tc.n, tc.d); got != tc.want {
			t.Errorf("Rate(%d, %v) = %v, want %v", tc.n, tc.d, got, tc.want)
		}
	}
}
