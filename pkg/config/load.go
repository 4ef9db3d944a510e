package config

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// New returns a viper instance reading TIDELINE_* variables, with defaults.
func New() *viper.Viper {
	v := viper.New()
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	Defaults(v)
	return v
}

// Load reads the file at path (if not empty) into v, then decodes and
// validates the result.
func Load(v *viper.Viper, path string) (*Config, error) {
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("config: read %s: %w", path, err)
		}
	}
	return Decode(v)
}

// Decode turns v's settings (file, env, flags, defaults) into a Config.
func Decode(v *viper.Viper) (*Config, error) {
	// AllSettings resolves every known key through env and flags, which a
	// plain Unmarshal of nested maps would not do.
	all := v.AllSettings()
	chains, _ := all["chains"].(map[string]any)
	delete(all, "chains")
	var cfg Config
	if err := decode(all, &cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cfg.Chains = map[string]Chain{}
	for id, raw := range chains {
		c := DefaultChain()
		if settings, ok := raw.(map[string]any); ok {
			if err := moveKeys("chains."+id, settings); err != nil {
				return nil, err
			}
		}
		if err := decode(raw, &c); err != nil {
			return nil, fmt.Errorf("config: chains.%s: %w", id, err)
		}
		cfg.Chains[id] = c
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func decode(in any, out any) error {
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           out,
		WeaklyTypedInput: true,
		ErrorUnused:      true,
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			mapstructure.StringToTimeDurationHookFunc(), refuseNegativeUnsigned, tracesShorthand),
	})
	if err != nil {
		return err
	}
	return dec.Decode(in)
}

// refuseNegativeUnsigned stops a negative number from wrapping around into
// an unsigned key (weakly typed input would turn -1 into 2^64-1).
func refuseNegativeUnsigned(from, to reflect.Type, data any) (any, error) {
	switch to.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return data, nil
	}
	v := reflect.ValueOf(data)
	switch from.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Int() < 0 {
			return nil, fmt.Errorf("%d is negative; must be 0 or more", v.Int())
		}
	case reflect.Float32, reflect.Float64:
		if v.Float() < 0 {
			return nil, fmt.Errorf("%v is negative; must be 0 or more", v.Float())
		}
	case reflect.String:
		if strings.HasPrefix(strings.TrimSpace(v.String()), "-") {
			return nil, fmt.Errorf("%q is negative; must be 0 or more", v.String())
		}
	}
	return data, nil
}
