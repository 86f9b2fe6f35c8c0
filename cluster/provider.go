package cluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Java Dubbo's defaults for a provider URL without weight or warmup parameters.
const (
	DefaultWeight = 100
	DefaultWarmup = 10 * time.Minute
)

// Provider is one provider address of a service, as a registry reports it.
// A Provider is immutable: a registry replaces its snapshot ([]*Provider)
// when something changes and never mutates a snapshot it handed out, so a
// snapshot's identity stands for its content (policies cache per snapshot).
type Provider struct {
	// Addr is host:port, Java's URL.getAddress().
	Addr string
	// Weight is the URL parameter weight (DefaultWeight when absent). A
	// weight of 0 takes no share while other providers have weight, as in Java.
	Weight int
	// Warmup is the URL parameter warmup (milliseconds in the URL;
	// DefaultWarmup when absent); 0 means no warm-up.
	Warmup time.Duration
	// Timestamp is the URL parameter timestamp (Unix milliseconds): when the
	// provider started, from which warm-up is counted. Zero: no warm-up.
	Timestamp time.Time
	// TLS is the URL parameter ssl-enabled=true: the provider's protocol
	// is served over TLS (Java Dubbo's ProtocolConfig.sslEnabled).
	TLS bool
	// Protocol is the URL's protocol: dubbo (the zero value) or tri.
	Protocol Protocol
	// Params are the other URL parameters but pid.
	Params Params
	// Timeout, when set (by a consumer-side configurator of Dubbo's
	// config centre, never by the provider's URL), bounds each call to
	// this provider; the route's timeout still bounds the whole call.
	Timeout time.Duration
}

// Protocol is the RPC protocol a provider speaks.
type Protocol uint8

// The protocols of provider URLs this gateway calls.
const (
	ProtocolDubbo  Protocol = iota // dubbo://: TCP, hessian2
	ProtocolTriple                 // tri://: Triple, HTTP/2
)

// ParseProtocol returns the Protocol of a URL scheme, false for one this
// gateway does not speak.
func ParseProtocol(scheme string) (Protocol, bool) {
	switch scheme {
	case "dubbo":
		return ProtocolDubbo, true
	case "tri":
		return ProtocolTriple, true
	}
	return 0, false
}

func (p Protocol) String() string {
	if p == ProtocolTriple {
		return "tri"
	}
	return "dubbo"
}

// NewProvider builds a Provider from a registry URL's address and
// parameters, applying Java Dubbo's defaults (weight 100, warmup 10 min).
// weight, warmup, timestamp and ssl-enabled are taken out of params, pid (the
// provider's process id, which no rule reads) is dropped, and the rest is
// kept in Params: the providers of one service then usually share one
// Params. A parameter that is not an integer is an error naming it (not
// the address: the caller says which provider it was building).
func NewProvider(addr string, params map[string]string) (*Provider, error) {
	p := &Provider{Addr: addr, Weight: DefaultWeight, Warmup: DefaultWarmup}
	var rest map[string]string
	for k, v := range params {
		taken, err := p.TakeParam(k, v)
		if err != nil {
			return nil, err
		}
		if !taken {
			if rest == nil {
				rest = make(map[string]string, len(params))
			}
			rest[k] = v
		}
	}
	p.Params = NewParams(rest)
	return p, nil
}

// TakeParam applies a URL parameter that is one of p's own fields (weight,
// warmup, timestamp, ssl-enabled) or dropped (pid), and reports whether it was one:
// the others belong in Params. A field's value that is not an integer is
// an error naming it. NewProvider calls it for each parameter, and so does
// a registry that builds Params itself.
func (p *Provider) TakeParam(k, v string) (bool, error) {
	switch k {
	case "weight", "warmup", "timestamp":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return true, fmt.Errorf("parameter %s=%q is not an integer", k, v)
		}
		switch k {
		case "weight":
			p.Weight = int(max(min(n, 1<<31-1), -1<<31))
		case "warmup":
			p.Warmup = time.Duration(max(n, 0)) * time.Millisecond
		case "timestamp":
			if n > 0 {
				p.Timestamp = time.UnixMilli(n)
			}
		}
		return true, nil
	case "ssl-enabled":
		p.TLS = strings.EqualFold(v, "true")
		return true, nil
	case "pid":
		return true, nil
	}
	return false, nil
}

// EffectiveWeight is p's weight at now with warm-up, computed as Java
// Dubbo's AbstractLoadBalance.getWeight does: while the provider's uptime
// is under its warm-up time, the weight grows linearly with the uptime
// (weight × uptime / warmup, in Java's float arithmetic, at least 1); a
// provider whose timestamp lies in the future weighs 1; a negative weight
// counts as 0.
func EffectiveWeight(p *Provider, now time.Time) int {
	w := p.Weight
	if w <= 0 {
		return 0
	}
	if p.Timestamp.IsZero() {
		return w
	}
	uptime := now.UnixMilli() - p.Timestamp.UnixMilli()
	if uptime < 0 {
		return 1
	}
	warmup := p.Warmup.Milliseconds()
	if uptime > 0 && uptime < warmup {
		return warmupWeight(uptime, warmup, w)
	}
	return w
}

// warmupWeight is Java's calculateWarmupWeight:
// (int) (uptime / ((float) warmup / weight)), kept within [1, weight].
// Both operands are ints in Java; warmup above 2^31-1 ms does not occur there.
func warmupWeight(uptime, warmup int64, weight int) int {
	ww := int(float32(int32(uptime)) / (float32(int32(warmup)) / float32(weight)))
	return max(1, min(ww, weight))
}
