package workload

// rng is xoshiro256** seeded through splitmix64: a fixed algorithm, so a
// seed gives the same stream on every platform and Go release.
type rng struct{ s [4]uint64 }

func newRNG(seed uint64) rng {
	var r rng
	for i := range r.s {
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		r.s[i] = z ^ z>>31
	}
	return r
}

func (r *rng) next() uint64 {
	s := &r.s
	out := rotl(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = rotl(s[3], 45)
	return out
}

func rotl(x uint64, k uint) uint64 { return x<<k | x>>(64-k) }

// float returns a uniform float64 in [0, 1).
func (r *rng) float() float64 { return float64(r.next()>>11) / (1 << 53) }

// intn returns a uniform int in [0, n), 0 < n < 2³² (Lemire's
// multiply-shift: integer arithmetic only).
func (r *rng) intn(n int) int { return int((r.next() >> 32) * uint64(n) >> 32) }

// between returns a uniform int in [lo, hi].
func (r *rng) between(lo, hi int) int { return lo + r.intn(hi-lo+1) }

// chance reports true with probability p.
func (r *rng) chance(p float64) bool { return r.float() < p }

// logUniform returns an int in [lo, hi], 0 < lo ≤ hi, with probability
// proportional to 1/v: the discrete log-uniform distribution. It draws v
// uniformly and keeps it with probability lo/v, in integers only, so no
// platform's math.Log or fused multiply-add can change the stream.
func (r *rng) logUniform(lo, hi int) int {
	for {
		v := r.between(lo, hi)
		if r.intn(v) < lo {
			return v
		}
	}
}
