package dubbo

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/dubbo/protocol"
	"github.com/dubbogw/dubbogw/hessian"
)

// The benchmarks call greet(String) generically over loopback TCP, on the
// in-process demo provider (BenchmarkInvoke) and on a provider that only
// sends back a canned answer (BenchmarkClient). Each has a raw baseline:
// the same frames written and read on a bare connection, one call at a
// time, with no client at all. Allocations are the process's, provider
// included.

func benchGreet() *Invocation {
	return demoCall("greet", true, stringType, "ann")
}

// rawRoundTrips makes b.N calls of greet on a bare connection: the
// baseline, what any client must at least do.
func rawRoundTrips(b *testing.B, addr string) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	r := protocol.NewReader(nc, protocol.DefaultMaxPayload)
	e := hessian.NewEncoder(nil)
	d := hessian.NewDecoder(nil)
	inv := benchGreet()
	writeArgs := func(e *hessian.Encoder) error {
		e.WriteString(inv.Method)
		e.WriteListStart(protocol.GenericTypesListType, 1)
		e.WriteString(inv.ParamTypes[0])
		e.WriteListStart(protocol.GenericArgsListType, 1)
		e.WriteString("ann")
		return nil
	}
	att := map[string]string{"path": inv.Interface, "interface": inv.Interface, "version": "", "timeout": "1000", "generic": "true"}
	var frame []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req := protocol.Request{ID: uint64(i), TwoWay: true, Path: inv.Interface, Method: protocol.MethodInvoke,
			ParamTypes: protocol.GenericParamTypes, Attachments: att, WriteArgs: writeArgs}
		if frame, err = protocol.AppendRequest(frame[:0], e, &req); err != nil {
			b.Fatal(err)
		}
		if _, err := nc.Write(frame); err != nil {
			b.Fatal(err)
		}
		h, body, err := r.Next()
		if err != nil {
			b.Fatal(err)
		}
		resp, err := protocol.DecodeResponse(h, body, d)
		if err != nil || resp.Value != "Hello, ann" {
			b.Fatalf("%v, %v", resp, err)
		}
	}
}

func BenchmarkInvoke(b *testing.B) {
	_, addr := startDemo(b, "127.0.0.1:0")
	b.Run("raw", func(b *testing.B) { rawRoundTrips(b, addr) })
	c := newClient(b, Options{})
	inv := benchGreet()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, err := c.Invoke(ctx, addr, inv); err != nil {
		b.Fatal(err)
	}
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := c.Invoke(ctx, addr, inv)
			if err != nil || res.Value != "Hello, ann" {
				b.Fatalf("%v, %v", res, err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32) // 64 callers on 2 cores: the writer batches
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				res, err := c.Invoke(ctx, addr, inv)
				if err != nil || res.Value != "Hello, ann" {
					b.Errorf("%v, %v", res, err)
					return
				}
			}
		})
	})
}

// cannedProvider answers every call with the same prebuilt response, so
// that what BenchmarkClient measures, allocations included, is the client.
func cannedProvider(fc *fakeConn) {
	resp, err := protocol.AppendResponse(nil, hessian.NewEncoder(nil), &protocol.Response{Value: "Hello, ann"})
	if err != nil {
		panic(err)
	}
	for {
		h, _, err := fc.r.Next()
		if err != nil {
			return
		}
		if h.Event {
			if h.Request && h.TwoWay {
				_ = fc.write(protocol.AppendHeartbeat(nil, h.ID, false))
			}
			continue
		}
		binary.BigEndian.PutUint64(resp[4:12], h.ID)
		if _, err := fc.nc.Write(resp); err != nil {
			return
		}
	}
}

// BenchmarkClient is BenchmarkInvoke against cannedProvider: the client's
// own cost. raw is the baseline of the same frames on a bare connection.
func BenchmarkClient(b *testing.B) {
	addr := startProvider(b, "127.0.0.1:0", cannedProvider).Addr()
	inv := benchGreet()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.Run("raw", func(b *testing.B) { rawRoundTrips(b, addr) })
	c := newClient(b, Options{})
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Invoke(ctx, addr, inv); err != nil {
				b.Fatal(err)
			}
		}
	})
	typed := demoCall("greet", false, stringType, "ann")
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Invoke(ctx, addr, typed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Invoke(ctx, addr, inv); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
