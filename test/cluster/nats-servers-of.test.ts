/**
 * SILK_NATS_SERVERS (cluster/nats/manifest.ts `natsServersOf`): a process of a cluster connects to the URLs its
 * environment gives (the chaos harness's proxies) instead of cluster.json's, and a malformed value is refused with
 * invalid_option naming the variable before anything connects.
 */
import { describe, expect, it } from "vitest";
import { CLUSTER_FORMAT, NATS_SERVERS_ENV, natsServersOf, type ClusterManifest } from "../../cluster/nats/manifest.js";
import { SilkError } from "../../protocol/errors.js";

const manifest: ClusterManifest = { format: CLUSTER_FORMAT, name: "c", nats: ["nats://127.0.0.1:4222", "nats://127.0.0.1:4223"], partitions: 1, replicas: 1, project: "/p", port: 0 };

describe("natsServersOf", () => {
  it("answers cluster.json's URLs without the variable (or with it empty), the variable's otherwise", () => {
    expect(natsServersOf(manifest, {})).toEqual(manifest.nats);
    expect(natsServersOf(manifest, { [NATS_SERVERS_ENV]: "" })).toEqual(manifest.nats);
    expect(natsServersOf(manifest, { [NATS_SERVERS_ENV]: "nats://127.0.0.1:5000, nats://127.0.0.1:5001" })).toEqual(["nats://127.0.0.1:5000", "nats://127.0.0.1:5001"]);
  });

  it("refuses anything but comma-separated nats:// URLs with invalid_option", () => {
    for (const bad of ["127.0.0.1:4222", "nats://a,,nats://b", "http://127.0.0.1:4222", "nats://a b"]) {
      let caught: unknown;
      try {
        natsServersOf(manifest, { [NATS_SERVERS_ENV]: bad });
      } catch (cause) {
        caught = cause;
      }
      expect(caught, bad).toBeInstanceOf(SilkError);
      expect((caught as SilkError).code).toBe("invalid_option");
      expect((caught as SilkError).message).toContain(`${NATS_SERVERS_ENV} must be comma-separated nats:// URLs`);
    }
  });
});
