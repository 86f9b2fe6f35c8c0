package configsource

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dubbogw/dubbogw/internal/testenv"
	"github.com/dubbogw/dubbogw/internal/zk"
)

// testNode is a unique configuration path on the test ZooKeeper, deleted
// (with everything under it) when the test ends.
func testNode(t *testing.T, addr string) Location {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	root := "/dubbogw-configsource-" + hex.EncodeToString(b)
	t.Cleanup(func() { deleteTree(t, addr, root) })
	return Location{Addrs: []string{addr}, Path: root + "/gw/config"}
}

func deleteTree(t *testing.T, addr, root string) {
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(zk.SlogLogger{Log: slog.New(slog.DiscardHandler)}), zk.WithLogInfo(false))
	if err != nil {
		return
	}
	defer conn.Close()
	var del func(p string)
	del = func(p string) {
		children, _, _ := conn.Children(p)
		for _, c := range children {
			del(p + "/" + c)
		}
		_ = conn.Delete(p, -1)
	}
	del(root)
}

func openStore(t *testing.T, loc Location) *Store {
	t.Helper()
	s, err := OpenStore(loc, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func version(v int32) *int32 { return &v }

// TestStorePushHistoryRollback: pushes write with a compare-and-set on
// the node's version; a push from a stale version is refused naming both
// versions; the history keeps the last N pushes, oldest pruned in the
// same transaction; rollback reaches an older version.
func TestStorePushHistoryRollback(t *testing.T) {
	loc := testNode(t, testenv.ZooKeeperAddr(t))
	s := openStore(t, loc)
	ctx := context.Background()

	if _, err := s.Get(ctx); !errors.Is(err, ErrNoConfig) {
		t.Fatalf("Get of a missing node: %v", err)
	}
	// --if-version on a missing node: a conflict, not a creation.
	if _, err := s.Push(ctx, []byte("a: 0\n"), PushOptions{IfVersion: version(3)}); !isConflict(err, 3, -1) {
		t.Fatalf("push --if-version 3 to a missing node: %v", err)
	}
	for i, text := range []string{"a: 0\n", "a: 1\n", "a: 2\n", "a: 3\n"} {
		v, err := s.Push(ctx, []byte(text), PushOptions{Keep: 3})
		if err != nil || v != int32(i) {
			t.Fatalf("push %d: version %d, %v", i, v, err)
		}
	}
	n, err := s.Get(ctx)
	if err != nil || string(n.Data) != "a: 3\n" || n.Version != 3 {
		t.Fatalf("Get: %+v %v", n, err)
	}
	// Two operators read version 3; the first writes, the second is refused.
	if _, err := s.Push(ctx, []byte("a: first\n"), PushOptions{IfVersion: version(3)}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Push(ctx, []byte("a: second\n"), PushOptions{IfVersion: version(3)})
	if !isConflict(err, 3, 4) || !strings.Contains(err.Error(), "expected version 3, found version 4") {
		t.Fatalf("stale push: %v", err)
	}
	if n, _ := s.Get(ctx); string(n.Data) != "a: first\n" {
		t.Fatalf("the refused push wrote: %q", n.Data)
	}
	// --force writes whatever the version.
	if v, err := s.Push(ctx, []byte("a: forced\n"), PushOptions{IfVersion: version(3), Force: true, Keep: 3}); err != nil || v != 5 {
		t.Fatalf("forced push: %d %v", v, err)
	}
	h, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for _, e := range h {
		got = append(got, e.Version)
		if e.Live != (e.Version == 5) || e.Pushed.IsZero() || e.Size == 0 {
			t.Errorf("entry %+v", e)
		}
	}
	if len(got) != 3 || got[0] != 3 || got[1] != 4 || got[2] != 5 {
		t.Fatalf("history keeps the last 3: %v", got)
	}
	data, err := s.EntryData(ctx, 3)
	if err != nil || string(data) != "a: 3\n" {
		t.Fatalf("entry 3: %q %v", data, err)
	}
	if _, err := s.EntryData(ctx, 1); err == nil || !strings.Contains(err.Error(), "it has: 3, 4, 5") {
		t.Fatalf("a pruned entry: %v", err)
	}
}

// TestStoreKeepsForeignVersion: a node written by other means (zkCli)
// is kept in the history by the next push, so a rollback can reach it.
func TestStoreKeepsForeignVersion(t *testing.T) {
	addr := testenv.ZooKeeperAddr(t)
	loc := testNode(t, addr)
	s := openStore(t, loc)
	ctx := context.Background()
	if _, err := s.Push(ctx, []byte("a: 0\n"), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	err := s.zk.call(ctx, "writing", func(c *zk.Conn) error {
		_, err := c.Set(loc.Path, []byte("a: by-hand\n"), 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(ctx, []byte("a: 2\n"), PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if data, err := s.EntryData(ctx, 1); err != nil || string(data) != "a: by-hand\n" {
		t.Fatalf("the hand-written version: %q %v", data, err)
	}
}

func isConflict(err error, expected, actual int32) bool {
	var c *Conflict
	return errors.As(err, &c) && c.Expected == expected && c.Actual == actual
}

// TestStoreRefusesTooLarge: a configuration that cannot fit a push's
// transaction is refused before anything is written.
func TestStoreRefusesTooLarge(t *testing.T) {
	loc := testNode(t, testenv.ZooKeeperAddr(t))
	s := openStore(t, loc)
	_, err := s.Push(context.Background(), make([]byte, MaxConfigBytes+1), PushOptions{})
	if err == nil || !strings.Contains(err.Error(), "jute.maxbuffer") {
		t.Fatalf("push of %d bytes: %v", MaxConfigBytes+1, err)
	}
	if _, err := s.Get(context.Background()); !errors.Is(err, ErrNoConfig) {
		t.Fatalf("something was written: %v", err)
	}
}
