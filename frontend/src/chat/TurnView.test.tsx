import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { Source } from "../api/types";
import { TurnView } from "./TurnView";
import { newTurn, type Turn } from "./turns";

const LABEL = "Troubleshooting Guide › A device shows as offline";
const PATH = ["Troubleshooting Guide", "A device shows as offline"];
const STEPS = [
  "Check that the device has power.",
  "Check that the router is on.",
  "Move the device closer to the router.",
  "Restart the device.",
  "Re-add the device in the app.",
];

const source = (n: number, section_path: string[], text: string, title = "Troubleshooting Guide"): Source => ({
  n,
  chunk_id: `chunk-${n}`,
  document_id: title === "Troubleshooting Guide" ? "doc-1" : "doc-2",
  title,
  section_path,
  page_start: null,
  page_end: null,
  score: 1,
  text,
});

// The offline section spans passages 2 and 1 (in that order); passage 3 is another section.
const SOURCES = [
  source(1, PATH, `${PATH.join(" > ")}\n${STEPS.slice(3).map((s, i) => `${i + 4}. ${s}`).join("\n")}\n\nSee also [3].`),
  source(2, PATH, `${PATH.join(" > ")}\nIf a device shows as offline, check in order:\n${STEPS.slice(0, 3).map((s, i) => `${i + 1}. ${s}`).join("\n")}`),
  source(3, ["Wi-Fi"], "Use the 2.4 GHz band.", "Network FAQ"),
];
const STEPS_ANSWER = `From *${LABEL}*:\n${STEPS.map((s, i) => `${i + 1}. ${s} [${i < 3 ? 2 : 1}]`).join("\n")}`;

function doneTurn(over: Partial<Turn>): Turn {
  return {
    ...newTurn("My camera keeps going offline. What should I check?"),
    status: "done",
    sources: SOURCES,
    messageId: "m1",
    ...over,
  };
}

const UNIT = { label: LABEL, document_id: "doc-1", section_path: PATH, sources: [2, 1] };

describe("TurnView outcomes and excerpt answers", () => {
  it("shows an excerpt answer as a quote under its section title, steps as a numbered list with working chips", async () => {
    const onOpen = vi.fn();
    const { container } = render(
      <TurnView
        turn={doneTurn({ answer: STEPS_ANSWER, outcome: "answered", unit: UNIT, mode: "excerpt" })}
        onOpenCitation={onOpen}
      />,
    );
    expect(screen.getByText("Answered")).toHaveClass("outcome-badge");
    const figure = screen.getByRole("figure", { name: `From ${LABEL}` });
    const quote = figure.querySelector("blockquote.excerpt-quote")!;
    expect(quote).not.toBeNull();
    // the title comes first, above the quote, and the "From *…*:" line is not repeated inside it
    expect(figure.firstElementChild?.tagName).toBe("FIGCAPTION");
    expect(quote).not.toHaveTextContent("From");
    const list = within(quote as HTMLElement).getByRole("list");
    expect(list.tagName).toBe("OL");
    const items = within(list).getAllByRole("listitem");
    expect(items.map((li) => li.textContent?.replace(/\s*\[\d\]$/, ""))).toEqual(STEPS);
    await userEvent.click(within(items[4]).getByRole("button", { name: "Citation 1: Troubleshooting Guide" }));
    expect(onOpen).toHaveBeenCalledWith("chunk-1");
    expect(container.querySelectorAll(".answer-text")).toHaveLength(1);
  });

  it("reveals the whole section, the unit's passages in its order, with Show whole section", async () => {
    render(
      <TurnView
        turn={doneTurn({ answer: STEPS_ANSWER, outcome: "answered", unit: UNIT, mode: "excerpt" })}
        onOpenCitation={() => {}}
      />,
    );
    const toggle = screen.getByRole("button", { name: "Show whole section" });
    expect(toggle).toHaveAttribute("aria-expanded", "false");
    expect(screen.queryByRole("region", { name: `Whole section: ${LABEL}` })).toBeNull(); // hidden
    await userEvent.click(toggle);
    expect(toggle).toHaveAttribute("aria-expanded", "true");
    expect(toggle).toHaveTextContent("Hide whole section");
    const region = screen.getByRole("region", { name: `Whole section: ${LABEL}` });
    expect(toggle).toHaveAttribute("aria-controls", region.id);
    const passages = region.querySelectorAll("blockquote.section-passage");
    expect(passages).toHaveLength(2);
    expect(passages[0]).toHaveTextContent(/^If a device shows as offline, check in order:/); // passage 2 first
    expect(passages[0].querySelector("ol")?.querySelectorAll("li")).toHaveLength(3);
    expect(passages[1].querySelector("ol")).toHaveAttribute("start", "4");
    expect(region).not.toHaveTextContent("Troubleshooting Guide > A device"); // heading-path line dropped
    expect(region).not.toHaveTextContent("2.4 GHz"); // another section's passage
    // a marker in document text cites nothing: it stays text
    expect(region).toHaveTextContent("See also [3].");
    expect(within(region).queryByRole("button")).toBeNull();
    await userEvent.click(toggle);
    expect(toggle).toHaveAttribute("aria-expanded", "false");
    expect(screen.queryByRole("region", { name: `Whole section: ${LABEL}` })).toBeNull();
  });

  it("quotes an 'Also, from' point separately, under its own section", () => {
    const answer = `From *${LABEL}*:\nRestart the device [1].\n\nAlso, from *Network FAQ › Wi-Fi*: Use the 2.4 GHz band [3].`;
    render(<TurnView turn={doneTurn({ answer, outcome: "answered", unit: UNIT, mode: "excerpt" })} onOpenCitation={() => {}} />);
    const also = screen.getByRole("figure", { name: "Also, from Network FAQ › Wi-Fi" });
    expect(within(also).getByRole("button", { name: "Citation 3: Network FAQ" })).toBeInTheDocument();
    expect(screen.getByRole("figure", { name: `From ${LABEL}` })).not.toHaveTextContent("2.4 GHz");
  });

  it("renders a generated answer as text, as before, with its outcome", () => {
    const { container } = render(
      <TurnView
        turn={doneTurn({ answer: "Check power and the router [2].", outcome: "answered", unit: UNIT, mode: "generated" })}
        onOpenCitation={() => {}}
      />,
    );
    expect(screen.getByText("Answered")).toBeInTheDocument();
    expect(container.querySelector("blockquote, figure")).toBeNull();
    expect(screen.queryByRole("button", { name: "Show whole section" })).toBeNull();
    expect(container.querySelector(".answer-text > p")).toHaveTextContent("Check power and the router [2].");
  });

  it("labels a partial answer and lists what the documents do not say, once", () => {
    const answer = `From *${LABEL}*:\nRestart the device [1].\n\nThe documents found do not say anything about “2025”, “business customers”.`;
    render(
      <TurnView
        turn={doneTurn({ answer, outcome: "partial", missing: ["2025", "business customers"], unit: UNIT, mode: "excerpt" })}
        onOpenCitation={() => {}}
      />,
    );
    expect(screen.getByText("Partial answer")).toHaveClass("outcome-partial");
    const missing = screen.getByRole("list", { name: "The documents found do not say anything about:" });
    expect(within(missing).getAllByRole("listitem").map((li) => li.textContent)).toEqual(["2025", "business customers"]);
    expect(screen.getByRole("figure")).not.toHaveTextContent("do not say");
    expect(screen.getAllByText(/do not say anything about/)).toHaveLength(1);
  });

  it("lists the names the section mentions, but not where it answers, apart from what the documents do not say", () => {
    const answer =
      `From *${LABEL}*:\nPreparatory schools in the UK prepare pupils to enter public schools [1].\n\n` +
      "The section found mentions “scotland”, but not where it answers this: check that the answer applies to it.";
    render(
      <TurnView
        turn={doneTurn({ answer, outcome: "partial", missing: ["scotland"], unlinked: ["scotland"], unit: UNIT, mode: "excerpt" })}
        onOpenCitation={() => {}}
      />,
    );
    expect(screen.getByText("Partial answer")).toHaveClass("outcome-partial");
    const unlinked = screen.getByRole("list", { name: /mentions these, but not where it answers/ });
    expect(within(unlinked).getAllByRole("listitem").map((li) => li.textContent)).toEqual(["scotland"]);
    expect(screen.queryByText("The documents found do not say anything about:")).toBeNull();
    expect(screen.getByRole("figure")).not.toHaveTextContent("mentions");
  });

  it("marks a not-found answer and offers the nearest sections as sources to open", async () => {
    const onOpen = vi.fn();
    const answer = `I could not find this in the knowledge base. The nearest sections are: *${LABEL}*; *Network FAQ › Wi-Fi*.`;
    render(
      <TurnView
        turn={doneTurn({ answer, refused: true, outcome: "not_found", unit: null, mode: "excerpt" })}
        onOpenCitation={onOpen}
      />,
    );
    expect(screen.getByText("Not found in the documents")).toHaveClass("outcome-not_found");
    expect(screen.queryByRole("figure")).toBeNull();
    expect(screen.getByText(LABEL, { selector: "em" })).toBeInTheDocument();
    const nearest = screen.getByRole("list", { name: "Nearest sections to look at:" });
    const buttons = within(nearest).getAllByRole("button");
    expect(buttons.map((b) => b.textContent)).toEqual([LABEL, "Network FAQ › Wi-Fi"]); // passages 1 and 2 are one section
    await userEvent.click(buttons[1]);
    expect(onOpen).toHaveBeenCalledWith("chunk-3");
    // the outcome replaces the generic refusal banner
    expect(screen.queryByText(/could not answer this from the knowledge base/)).toBeNull();
  });

  it("shows no outcome while streaming or for answers without one", () => {
    const { rerender } = render(
      <TurnView turn={doneTurn({ answer: STEPS_ANSWER, status: "streaming", outcome: null })} onOpenCitation={() => {}} />,
    );
    expect(document.querySelector(".outcome-badge, figure")).toBeNull();
    rerender(<TurnView turn={doneTurn({ answer: "Stored answer [1].", refused: true })} onOpenCitation={() => {}} />);
    expect(document.querySelector(".outcome-badge, figure")).toBeNull();
    expect(screen.getByText(/could not answer this from the knowledge base/)).toBeInTheDocument();
  });
});
