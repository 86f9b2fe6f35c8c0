// Package config defines dubbogw's YAML configuration: its top-level
// schema, defaults, ${ENV} substitution and strict validation whose errors
// name the YAML path and line of the offending key, every problem in one
// pass. Filters own their sections: each registers its configuration
// (RegisterFilter) with its own defaults and rules, and this package knows
// none of them by name.
package config
