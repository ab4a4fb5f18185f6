import { DurableStream, IdempotentProducer, stream } from "@durable-streams/client";

const base = process.env.BASE_URL ?? "http://127.0.0.1:8787";
const url = `${base}/v1/stream/notes-${Date.now()}`;
const handle = await DurableStream.create({ url, contentType: "application/json" });

// Exactly-once writes: batched, pipelined, deduplicated by (producer id, epoch, seq).
const producer = new IdempotentProducer(handle, "notes-writer", { autoClaim: true });
producer.append(JSON.stringify({ text: "first" }));
producer.append(JSON.stringify({ text: "second" }));
await producer.flush();
await producer.close(); // closes the stream too (detach() would leave it open)

// Catch up, then stop (live: false), or keep following (live: true, the default).
const res = await stream<{ text: string }>({ url, live: false });
console.log(JSON.stringify(await res.json())); // [{"text":"first"},{"text":"second"}]
