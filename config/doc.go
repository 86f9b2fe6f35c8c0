// Package config defines dubbogw's YAML configuration: its schema, defaults,
// ${ENV} substitution and strict validation whose errors name the YAML path
// of the offending key.
package config
