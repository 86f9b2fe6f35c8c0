// Package metadataservice asks Dubbo 3 application instances which
// services they serve: it calls their MetadataService
// (org.apache.dubbo.metadata.MetadataService, getMetadataInfo(revision))
// over the dubbo protocol, for application-level discovery of instances
// that keep their metadata themselves (storage "local").
package metadataservice

import (
	"context"
	"fmt"

	"github.com/dubbogw/dubbogw/dubbo"
	"github.com/dubbogw/dubbogw/registry"
)

// Interface and Version of Dubbo's MetadataService; its group is the
// application's name.
const (
	Interface = "org.apache.dubbo.metadata.MetadataService"
	Version   = "1.0.0"
)

// Fetcher returns a registry.MetadataFetcher calling instances'
// MetadataService with c.
func Fetcher(c *dubbo.Client) registry.MetadataFetcher {
	return func(ctx context.Context, inst *registry.Instance) (*registry.MetadataInfo, error) {
		addr, err := inst.MetadataServiceAddr()
		if err != nil {
			return nil, err
		}
		res, err := c.Invoke(ctx, addr, &dubbo.Invocation{
			Interface:  Interface,
			Version:    inst.MetadataServiceVersion(),
			Group:      inst.MetadataServiceGroup(),
			Method:     "getMetadataInfo",
			ParamTypes: []string{"java.lang.String"},
			Args:       []any{inst.Revision},
		})
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
