// Package metadataservice asks Dubbo 3 application instances which
// services they serve: it calls their MetadataService
// (org.apache.dubbo.metadata.MetadataService, getMetadataInfo(revision))
// over the dubbo protocol, for application-level discovery of instances
// that keep their metadata themselves (storage "local").
package metadataservice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/registry"
)

// Interface and Version of Dubbo's MetadataService; its group is the
// application's name.
const (
	Interface = "org.apache.dubbo.metadata.MetadataService"
	Version   = "1.0.0"
)

// A call that found no connection is tried again every connectRetry for
// at most connectPatience: enough for a redial to a live process, short
// enough that an instance nothing listens on is soon known as failed (its
// retries are then the registry's, with a backoff).
const (
	connectRetry    = 50 * time.Millisecond
	connectPatience = time.Second
)

// Fetcher returns a registry.MetadataFetcher calling instances'
// MetadataService with c.
func Fetcher(c *dubbo.Client) registry.MetadataFetcher {
	return func(ctx context.Context, inst *registry.Instance) (*registry.MetadataInfo, error) {
		addr, err := inst.MetadataServiceAddr()
		if err != nil {
			return nil, err
		}
		inv := &dubbo.Invocation{
			Interface:  Interface,
			Version:    inst.MetadataServiceVersion(),
			Group:      inst.MetadataServiceGroup(),
			Method:     "getMetadataInfo",
			ParamTypes: []string{"java.lang.String"},
			Args:       []any{inst.Revision},
		}
		res, err := c.Invoke(ctx, addr, inv)
		if err != nil && notConnected(err) {
			// A provider restarted on the same address (a deploy)
			// registers its new instance while the client's connection to
			// the old process waits out its reconnect backoff, failing
			// calls at once: dial now, and try again for a little while.
			c.Redial(addr)
			retryCtx, cancel := context.WithTimeout(ctx, connectPatience)
			err = retryConnect(retryCtx, err, func() error {
				res, err = c.Invoke(ctx, addr, inv)
				return err
			})
			cancel()
		}
		if err != nil {
			return nil, err
		}
		info, err := registry.MetadataFromHessian(res.Value)
		if err != nil {
			return nil, fmt.Errorf("the answer of %s.getMetadataInfo at %s: %w", Interface, addr, err)
		}
		return info, nil
	}
}

func notConnected(err error) bool {
	return errors.Is(err, dubbo.ErrConnect) || errors.Is(err, dubbo.ErrConnectionLost)
}

// retryConnect calls call until it returns something other than a
// connection error, or ctx ends; it returns call's last error (err, the
// first call's, when it made none).
func retryConnect(ctx context.Context, err error, call func() error) error {
	t := time.NewTicker(connectRetry)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return err
		}
		if err = call(); err == nil || !notConnected(err) {
			return err
		}
	}
}
