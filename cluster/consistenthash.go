package cluster

import (
	"crypto/md5"
	"encoding/binary"
	"slices"
	"strconv"
)

// consistentHash maps Call.HashKey to a provider on Dubbo's MD5 ring, so the same key reaches the same provider as Java Dubbo's ConsistentHashLoadBalance.
type consistentHash struct {
	nodes int // virtual nodes per provider
	cache snapshotCache[*ring]
}

// ring is the hash ring of one snapshot: points sorted by hash, each owned
// by a provider index.
type ring struct {
	hashes []uint32
	owners []int32
}

// Select implements Policy: the first ring point at or after the key's hash
// (wrapping around), skipping points of excluded providers.
func (p *consistentHash) Select(providers []*Provider, call *Call) *Provider {
	if len(providers) == 0 {
		return nil
	}
	r := p.ring(providers)
	var key string
	if call != nil {
		key = call.HashKey
	}
	h := hashKey(key)
	start, _ := slices.BinarySearch(r.hashes, h)
	all := call.excludesNone()
	for k := range len(r.hashes) {
		i := start + k
		if i >= len(r.hashes) {
			i -= len(r.hashes)
		}
		owner := int(r.owners[i])
		if all || !call.Excludes(providers, owner) {
			return providers[owner]
		}
	}
	return nil
}

// ring returns the ring of providers, building it on the snapshot's first use.
func (p *consistentHash) ring(providers []*Provider) *ring {
	if r, ok := p.cache.load(providers); ok {
		return r
	}
	p.cache.mu.Lock()
	defer p.cache.mu.Unlock()
	if r, ok := p.cache.load(providers); ok {
		return r
	}
	r := buildRing(providers, p.nodes)
	p.cache.store(providers, r)
	return r
}

// buildRing places nodes/4 MD5 digests of address+i per provider on the
// ring, 4 points per digest, as Dubbo does. Dubbo's TreeMap keeps the last
// provider put at a colliding point; so does this.
func buildRing(providers []*Provider, nodes int) *ring {
	type point struct {
		hash  uint32
		owner int32
	}
	points := make([]point, 0, len(providers)*(nodes/4)*4)
	var buf []byte
	for idx, pr := range providers {
		for i := range nodes / 4 {
			buf = strconv.AppendInt(append(buf[:0], pr.Addr...), int64(i), 10)
			d := md5.Sum(buf)
			for h := range 4 {
				points = append(points, point{binary.LittleEndian.Uint32(d[4*h:]), int32(idx)})
			}
		}
	}
	slices.SortStableFunc(points, func(a, b point) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	r := &ring{hashes: make([]uint32, 0, len(points)), owners: make([]int32, 0, len(points))}
	for i, pt := range points {
		if i+1 < len(points) && points[i+1].hash == pt.hash {
			continue // a later put wins
		}
		r.hashes = append(r.hashes, pt.hash)
		r.owners = append(r.owners, pt.owner)
	}
	return r
}

// hashKey is the ring position of a key: the first 4 bytes of its UTF-8
// MD5 digest, little-endian. Keys up to 256 bytes hash without allocating.
func hashKey(key string) uint32 {
	var buf [256]byte
	d := md5.Sum(append(buf[:0], key...))
	return binary.LittleEndian.Uint32(d[:4])
}
