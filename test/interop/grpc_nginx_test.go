package interop

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// startNginxGRPC starts nginx (Debian's, with its gRPC module) as a gRPC
// proxy on loopback: h2c in, grpc_pass to target out, upstream
// connections kept alive, both cores (worker_processes auto), as the
// bench harness runs it for the HTTP rows. It returns its address, or ""
// when nginx is not installed (the row is then skipped). It is the
// yardstick of a proxy that terminates HTTP/2 on both sides, written in
// C and tuned for years, on this machine: BenchmarkGRPCProxy.
func startNginxGRPC(tb testing.TB, target string) string {
	tb.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
		if _, err := os.Stat(bin); err != nil {
			return ""
		}
	}
	dir, err := os.MkdirTemp("", "dubbogw-nginx-grpc-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	// nginx's workers run as another user when started by root: let them in.
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(`daemon off;
worker_processes auto;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    keepalive_requests 100000000;
    upstream grpcserver {
        server %[3]s;
        keepalive 128;
        keepalive_requests 100000000;
    }
    server {
        listen %[2]s http2;
        http2_max_concurrent_streams 1024;
        location / { grpc_pass grpc://grpcserver; }
    }
}
`, dir, addr, target)), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir+"/", "-c", conf, "-e", filepath.Join(dir, "error.log"))
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting nginx: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // owned here: the clean-up stops nginx and waits for it
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			tb.Fatalf("nginx exited: %v\n%s", err, log)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("nginx not listening on %s after 10s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
