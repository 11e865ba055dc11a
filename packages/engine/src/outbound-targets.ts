// Where the runner may send requests of its own to URLs that others chose (a webhook's: docs/webhooks.md): the SSRF
// rules of docs/security.md, "Outbound requests". No loopback, private, link-local or otherwise non-public address
// unless the operator's allow-list (WEBHOOK_ALLOWED_TARGETS) names it. Every address a name resolves to is checked
// when the URL is accepted, and again by the lookup that opens the connection, so a name that resolves elsewhere
// later (DNS rebinding) cannot reach a refused address. Redirects are never followed (the caller's rule).
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { InvalidInputError } from '@mcp-tasks/protocol';
import { ConfigError } from './config.ts';

/** The address ranges refused unless allowed, each with what it is (the refusal says it). */
const NON_PUBLIC: readonly [string, readonly [string, number, 'ipv4' | 'ipv6'][]][] = [
  [
    'a loopback address',
    [
      ['127.0.0.0', 8, 'ipv4'],
      ['::1', 128, 'ipv6'],
    ],
  ],
  [
    'a private address',
    [
      ['10.0.0.0', 8, 'ipv4'],
      ['172.16.0.0', 12, 'ipv4'],
      ['192.168.0.0', 16, 'ipv4'],
      ['100.64.0.0', 10, 'ipv4'],
      ['fc00::', 7, 'ipv6'],
    ],
  ],
  [
    'a link-local address',
    [
      ['169.254.0.0', 16, 'ipv4'],
      ['fe80::', 10, 'ipv6'],
    ],
  ],
  [
    'an unspecified, multicast, reserved or translated address',
    [
      ['0.0.0.0', 8, 'ipv4'],
      ['192.0.0.0', 24, 'ipv4'],
      ['192.0.2.0', 24, 'ipv4'],
      ['192.88.99.0', 24, 'ipv4'],
      ['198.18.0.0', 15, 'ipv4'],
      ['198.51.100.0', 24, 'ipv4'],
      ['203.0.113.0', 24, 'ipv4'],
      ['224.0.0.0', 4, 'ipv4'],
      ['240.0.0.0', 4, 'ipv4'],
      // IPv4-compatible, NAT64, Teredo and 6to4 addresses carry an IPv4 address a gateway may reach.
      ['::', 96, 'ipv6'],
      ['64:ff9b::', 96, 'ipv6'],
      ['64:ff9b:1::', 48, 'ipv6'],
      ['100::', 64, 'ipv6'],
      ['2001::', 32, 'ipv6'],
      ['2001:db8::', 32, 'ipv6'],
      ['2002::', 16, 'ipv6'],
      ['fec0::', 10, 'ipv6'],
      ['ff00::', 8, 'ipv6'],
    ],
  ],
];

const RANGES = NON_PUBLIC.map(([what, subnets]) => {
  const list = new BlockList();
  for (const [network, prefix, type] of subnets) list.addSubnet(network, prefix, type);
  return [what, list] as const;
});

/** How long resolving a name may take when a URL is accepted. */
const RESOLVE_TIMEOUT_MS = 5000;

const familyOf = (address: string): 'ipv4' | 'ipv6' => (isIP(address) === 6 ? 'ipv6' : 'ipv4');

/** What kind of non-public address `address` is; undefined for a public one. (BlockList maps ::ffff:a.b.c.d to IPv4.) */
export function nonPublicKind(address: string): string | undefined {
  return RANGES.find(([, list]) => list.check(address, familyOf(address)))?.[0];
}

export type Lookup = (
  hostname: string,
  options: LookupOptions,
  callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
) => void;

/**
 * The operator's allow-list (WEBHOOK_ALLOWED_TARGETS: hosts, host:port pairs, IP addresses and CIDR ranges, separated
 * by commas or spaces) over the rule that only public addresses are reached. A host named in it is reached whatever
 * it resolves to; an address or range allows what resolves into it.
 */
export class OutboundTargets {
  readonly #hosts = new Set<string>();
  readonly #hostPorts = new Set<string>();
  readonly #ranges = new BlockList();

  /** The allow-list from its setting; ConfigError naming `variable` and the entry it cannot read. */
  static parse(list: string, variable = 'WEBHOOK_ALLOWED_TARGETS'): OutboundTargets {
    const targets = new OutboundTargets();
    for (const entry of list.split(/[\s,]+/).filter(Boolean)) {
      if (!targets.#add(entry.toLowerCase())) {
        throw new ConfigError(
          `${variable}: cannot read '${entry}': list hosts (hooks.internal), host:port pairs (hooks.internal:8443, ` +
            '[::1]:8080), addresses (10.0.0.7) and CIDR ranges (10.0.0.0/8, fd00::/8), separated by commas',
        );
      }
    }
    return targets;
  }

  #add(entry: string): boolean {
    const cidr = /^([0-9a-f:.]+)\/(\d{1,3})$/.exec(entry);
    if (cidr) {
      const [, network = '', bits] = cidr;
      const family = isIP(network);
      const prefix = Number(bits);
      if (family === 0 || prefix > (family === 4 ? 32 : 128)) return false;
      this.#ranges.addSubnet(network, prefix, family === 4 ? 'ipv4' : 'ipv6');
      return true;
    }
    if (isIP(entry) !== 0) {
      this.#ranges.addAddress(entry, familyOf(entry));
      return true;
    }
    const withPort = /^(\[[0-9a-f:.]+\]|[^:[\]]+):(\d{1,5})$/.exec(entry);
    if (withPort) {
      const [, host = '', port] = withPort;
      if (Number(port) > 65535 || !isHost(host)) return false;
      this.#hostPorts.add(`${bare(host)}:${Number(port)}`);
      return true;
    }
    if (!isHost(entry)) return false;
    this.#hosts.add(bare(entry));
    return true;
  }

  /**
   * Refuses (InvalidInputError: -32602 for a call naming it) a URL whose host is not named in the allow-list and
   * resolves to an address that is neither public nor allowed; every address the name has counts.
   */
  async check(url: string, where: string): Promise<void> {
    const { hostname, port } = targetOf(url);
    if (this.#allowsHost(hostname, port)) return;
    const addresses = isIP(hostname) !== 0 ? [hostname] : await resolveAll(hostname, where);
    for (const address of addresses) this.#checkAddress(hostname, address, where);
  }

  /**
   * The `lookup` of a connection to `url` (node:http's option): resolves as usual and refuses the connection when
   * an address is not allowed, so that what is checked is what is connected to.
   */
  lookupFor(url: string, where: string): Lookup {
    const { hostname, port } = targetOf(url);
    const trusted = this.#allowsHost(hostname, port);
    return (name, options, callback) => {
      dnsLookup(name, { ...options, all: true } as LookupAllOptions, (error, addresses) => {
        if (error) return callback(error, []);
        try {
          if (!trusted) for (const { address } of addresses) this.#checkAddress(name, address, where);
        } catch (refused) {
          return callback(refused as NodeJS.ErrnoException, []);
        }
        if (options.all === true) return callback(null, addresses);
        const first = addresses[0];
        if (!first) return callback(Object.assign(new Error(`${name} has no address`), { code: 'ENOTFOUND' }), []);
        callback(null, first.address, first.family);
      });
    };
  }

  /** An IP literal's check before any connection (node does not call `lookup` for one). */
  checkLiteral(url: string, where: string): void {
    const { hostname, port } = targetOf(url);
    if (isIP(hostname) !== 0 && !this.#allowsHost(hostname, port)) this.#checkAddress(hostname, hostname, where);
  }

  #allowsHost(hostname: string, port: number): boolean {
    return this.#hosts.has(hostname) || this.#hostPorts.has(`${hostname}:${port}`);
  }

  #checkAddress(hostname: string, address: string, where: string): void {
    const kind = nonPublicKind(address);
    if (kind === undefined || this.#ranges.check(address, familyOf(address))) return;
    const resolved = hostname === address ? address : `${hostname} resolves to ${address}, which`;
    throw new InvalidInputError(
      `${where}: ${resolved} is ${kind}; webhooks reach public addresses only unless WEBHOOK_ALLOWED_TARGETS ` +
        'names the host, the address or its range',
      { address },
    );
  }
}

/** The host (lowercase, IPv6 without brackets, no trailing dot) and port a URL connects to. */
function targetOf(url: string): { hostname: string; port: number } {
  const parsed = new URL(url);
  const port = parsed.port !== '' ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
  return { hostname: bare(parsed.hostname.toLowerCase()), port };
}

function bare(host: string): string {
  const unbracketed = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return unbracketed.endsWith('.') ? unbracketed.slice(0, -1) : unbracketed;
}

function isHost(host: string): boolean {
  const name = bare(host);
  return isIP(name) !== 0 || /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(name);
}

async function resolveAll(hostname: string, where: string): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new InvalidInputError(`${where}: ${hostname} did not resolve within ${RESOLVE_TIMEOUT_MS} ms`)),
      RESOLVE_TIMEOUT_MS,
    );
  });
  const resolved = new Promise<string[]>((resolve, reject) => {
    dnsLookup(hostname, { all: true }, (error, addresses) => {
      if (error || addresses.length === 0) {
        reject(new InvalidInputError(`${where}: ${hostname} does not resolve (${error?.code ?? 'no address'})`));
      } else resolve(addresses.map(({ address }) => address));
    });
  });
  try {
    return await Promise.race([resolved, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
