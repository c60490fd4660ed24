package sweep

import (
	"hash/fnv"
	"os"
)

// Env is the environment variable that selects the level: unset, empty or
// "0" for the sample, "long" for the long figures, anything else (say
// "full" or "1") for the full sweeps.
const Env = "SESSIONLOG_SWEEPS"

// Full reports whether every point of every sweep runs
// (SESSIONLOG_SWEEPS=full, or long).
func Full() bool {
	v := os.Getenv(Env)
	return v != "" && v != "0"
}

// Long reports whether the long figures were asked for
// (SESSIONLOG_SWEEPS=long): the sizes that take hours.
func Long() bool { return os.Getenv(Env) == "long" }

// Size returns sample, full or long, by the level.
func Size(sample, full, long int) int {
	switch {
	case Long():
		return long
	case Full():
		return full
	}
	return sample
}

// Points returns the indices of the points of a sweep of n that run:
// all of 0..n-1 under the full sweeps, else about k of them spread evenly
// from an offset that key (say the test's name) picks, always with the
// last. The same key picks the same points in every run; keys that differ
// (the cases of one sweep) cover different points.
func Points(n, k int, key string) []int {
	if n <= 0 {
		return nil
	}
	all := make([]int, 0, n)
	if Full() || k >= n || k <= 0 {
		for i := range n {
			all = append(all, i)
		}
		return all
	}
	stride := (n + k - 1) / k
	h := fnv.New32a()
	h.Write([]byte(key))
	for i := int(h.Sum32() % uint32(stride)); i < n; i += stride {
		all = append(all, i)
	}
	if all[len(all)-1] != n-1 {
		all = append(all, n-1)
	}
	return all
}
