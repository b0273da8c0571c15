"""PEC: persona-based empathetic conversations from Reddit (Zhong et al., EMNLP 2020), in one
package.

- :mod:`.records`: the raw records and the constants of the text format;
- :mod:`.text`: reading and writing the text format, cutting files at conversation ends;
- :mod:`.dataset`: the card and archive, reader (sharded), mapper (both ways), source
  writer, and ``persona.txt`` as the side table ``pec_personas``;
- :mod:`.present`: how exports, statistics and the viewer present it (its checks and tasks
  included);
- :mod:`.checks`: its invariants (``convbank validate``);
- :mod:`.tasks`: ``pec-response-selection`` (``convbank bench``);
- :mod:`.synthetic`: a synthetic corpus of any size in the publisher's format.
"""

from convbank.datasets.pec.dataset import Pec
from convbank.datasets.pec.records import ARCHIVE, DOMAINS, END, SEPARATOR, Example
from convbank.datasets.pec.text import conversation_block, parse_lines

__all__ = ["ARCHIVE", "DOMAINS", "END", "SEPARATOR", "Example", "Pec", "conversation_block", "parse_lines"]
