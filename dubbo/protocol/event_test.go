package protocol

import (
	"bytes"
	"testing"

	"github.com/dubbogw/dubbogw/hessian"
)

func TestHeartbeatBytes(t *testing.T) {
	// flag 0xe2 = request 0x80 | two-way 0x40 | event 0x20 | hessian2 2; body 'N'.
	req := AppendHeartbeat(nil, 1, true)
	want := hx(t, "da bb e2 00 | 00 00 00 00 00 00 00 01 | 00 00 00 01 | 4e")
	if !bytes.Equal(req, want) {
		t.Errorf("heartbeat request\n got  % x\n want % x", req, want)
	}
	// flag 0x22 = event | hessian2; status 20.
	resp := AppendHeartbeat(nil, 1, false)
	want = hx(t, "da bb 22 14 | 00 00 00 00 00 00 00 01 | 00 00 00 01 | 4e")
	if !bytes.Equal(resp, want) {
		t.Errorf("heartbeat response\n got  % x\n want % x", resp, want)
	}
}

func TestReadonlyEventBytes(t *testing.T) {
	// One-way request event: flag 0xa2; body the hessian string "R".
	got := AppendReadonlyEvent(nil, 9)
	want := hx(t, "da bb a2 00 | 00 00 00 00 00 00 00 09 | 00 00 00 02 | 01 52")
	if !bytes.Equal(got, want) {
		t.Errorf("got  % x\nwant % x", got, want)
	}
}

func TestDecodeEvents(t *testing.T) {
	d := hessian.NewDecoder(nil)

	h, body := mustFrame(t, AppendHeartbeat(nil, 5, true))
	req, err := DecodeRequest(h, body, d)
	if err != nil {
		t.Fatal(err)
	}
	if !req.IsHeartbeat() || req.IsReadonly() || !req.TwoWay || req.ID != 5 {
		t.Errorf("heartbeat request decoded as %+v", req)
	}

	h, body = mustFrame(t, AppendReadonlyEvent(nil, 6))
	req, err = DecodeRequest(h, body, d)
	if err != nil {
		t.Fatal(err)
	}
	if !req.IsReadonly() || req.IsHeartbeat() || req.TwoWay {
		t.Errorf("readonly event decoded as %+v", req)
	}

	h, body = mustFrame(t, AppendHeartbeat(nil, 5, false))
	resp, err := DecodeResponse(h, body, d)
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Event || resp.Status != StatusOK || resp.Value != nil || resp.ID != 5 {
		t.Errorf("heartbeat response decoded as %+v", resp)
	}

	// Some implementations send events with an empty body.
	h = Header{Request: true, TwoWay: true, Event: true, Serialization: 2, ID: 8}
	if req, err = DecodeRequest(h, nil, d); err != nil || !req.IsHeartbeat() {
		t.Errorf("empty heartbeat body: %+v, %v", req, err)
	}
}
