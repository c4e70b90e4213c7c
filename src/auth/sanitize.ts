// Kafka's Sanitizer: user and client-id names become config entity names (ZooKeeper node names) by URL
// encoding, with '*' as %2A and ' ' as %20 (Java's URLEncoder writes '+'), so any name is a valid path.

export function sanitizeEntityName(name: string): string {
  return encodeURIComponent(name).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%7E/g, '~')
}

export function desanitizeEntityName(name: string): string {
  return decodeURIComponent(name)
}
