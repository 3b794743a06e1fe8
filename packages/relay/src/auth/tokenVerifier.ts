/**
 * Verifies relay tokens (JWTs, `jose`): HS256 with a shared secret, or RS256 / ES256 / EdDSA
 * with a public key in PEM.
 */
import { createPublicKey, type KeyObject } from 'node:crypto'
import { jwtVerify } from 'jose'
import { Refusal } from '../protocol/refusal.ts'
import { type AccessGrant, readGrant } from './accessGrant.ts'

/**
 * How tokens are verified: a shared secret (HS256, at least 32 bytes) or a public key (PEM text
 * of an RSA, P-256 or Ed25519 key).
 *
 * @example
 * const key: TokenKey = { secret: new TextEncoder().encode(process.env.TIDEMARK_AUTH_SECRET) }
 * const other: TokenKey = { publicKeyPem: readFileSync('relay-public.pem', 'utf8') }
 */
export type TokenKey = { readonly secret: Uint8Array } | { readonly publicKeyPem: string }

/**
 * Shortest HS256 secret accepted, in bytes.
 *
 * @example
 * new TextEncoder().encode(process.env.TIDEMARK_AUTH_SECRET ?? '').byteLength >= MIN_SECRET_BYTES // 32
 */
export const MIN_SECRET_BYTES = 32

const MAX_TOKEN_LENGTH = 16_384

/**
 * Checks tokens against one key.
 *
 * @example
 * const verifier = new TokenVerifier({ secret })
 * const grant = await verifier.verify(token)
 * if (grant instanceof Refusal) console.log(grant.text) // e.g. 'token-expired'
 */
export class TokenVerifier {
  readonly #key: Uint8Array | KeyObject
  readonly #algorithms: string[]

  readonly #now: () => number

  /** Throws a TypeError or RangeError naming what is wrong with the key. `now` is the clock `exp` is read against. */
  constructor(key: TokenKey, now: () => number = Date.now) {
    this.#now = now
    if ('secret' in key) {
      if (!(key.secret instanceof Uint8Array) || key.secret.byteLength < MIN_SECRET_BYTES) {
        throw new RangeError(`the HS256 secret must be at least ${MIN_SECRET_BYTES} bytes`)
      }
      this.#key = key.secret
      this.#algorithms = ['HS256']
      return
    }
    // Node derives a public key from a private one: refuse it rather than hold the key that
    // signs every token on the relay.
    if (typeof key.publicKeyPem === 'string' && /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(key.publicKeyPem)) {
      throw new TypeError('this PEM is a private key; give the relay the public key alone (openssl pkey -in private.pem -pubout -out public.pem)')
    }
    let publicKey: KeyObject
    try {
      publicKey = createPublicKey(key.publicKeyPem)
    } catch (error) {
      throw new TypeError(`the public key is not a PEM public key: ${error instanceof Error ? error.message : String(error)}`)
    }
    this.#key = publicKey
    this.#algorithms = [algorithmOf(publicKey)]
  }

  /** The token's grant, or why it is refused (`no-token`, `bad-signature`, `token-expired`, `bad-token`, `bad-claims`). */
  async verify(token: string): Promise<AccessGrant | Refusal> {
    if (token.length === 0) return new Refusal('no-token')
    if (token.length > MAX_TOKEN_LENGTH) return new Refusal('bad-token', `longer than ${MAX_TOKEN_LENGTH} characters`)
    let payload: Record<string, unknown>
    try {
      payload = (await jwtVerify(token, this.#key, { algorithms: this.#algorithms, requiredClaims: ['exp'], currentDate: new Date(this.#now()) })).payload
    } catch (error) {
      return refusalOf(error)
    }
    const grant = readGrant(payload)
    return typeof grant === 'string' ? new Refusal('bad-claims', grant) : grant
  }
}

function algorithmOf(key: KeyObject): string {
  const type = key.asymmetricKeyType
  if (type === 'rsa') return 'RS256'
  if (type === 'ed25519') return 'EdDSA'
  if (type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256'
  throw new TypeError(`the public key must be RSA (RS256), P-256 (ES256) or Ed25519 (EdDSA), got ${type ?? 'unknown'} ${key.asymmetricKeyDetails?.namedCurve ?? ''}`.trim())
}

function refusalOf(error: unknown): Refusal {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
  if (code === 'ERR_JWT_EXPIRED') return new Refusal('token-expired')
  if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED' || code === 'ERR_JOSE_ALG_NOT_ALLOWED') return new Refusal('bad-signature')
  const message = error instanceof Error ? error.message : String(error)
  return new Refusal('bad-token', message)
}
